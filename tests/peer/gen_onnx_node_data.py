"""Writes the node test cases of the installed onnx package as backend test
data, in the layout of ONNX's (and Debian's libonnx-testdata) data folder:

  gen_onnx_node_data.py DIR

      DIR/node/<case>/model.onnx
      DIR/node/<case>/test_data_set_<i>/input_<j>.pb, output_<j>.pb
      DIR/VERSION      "onnx <version>, generator <N>", written last

The wheel on the package index carries the Python test cases
(onnx.backend.test.case.node) but not the data files the source tree
generates from them; this writes them the way onnx/backend/test/cmd_tools.py
writes the model cases: TensorProto for tensors, SequenceProto, MapProto or
OptionalProto where the graph's input or output is of that kind.

Idempotent: when DIR/VERSION names the installed onnx version and this
generator's revision, nothing is written. Otherwise the cases are written to
a fresh DIR/node.tmp that replaces DIR/node, so an interrupted run leaves no
half-written folder behind a matching VERSION. Prints one line: the version
and the number of cases.
"""

import os
import shutil
import sys
import warnings

import numpy as np
import onnx
from onnx import TensorProto, numpy_helper
from onnx.backend.test.case import node as node_cases

# Bump when the layout written here changes, so existing folders are redone.
GENERATOR = 1


def proto_for(value, value_info):
    """The proto cmd_tools.py writes for |value| of graph value |value_info|."""
    kind = value_info.type.WhichOneof("value")
    name = value_info.name
    if kind == "map_type":
        return numpy_helper.from_dict(value, name)
    if kind == "sequence_type":
        return numpy_helper.from_list(value, name)
    if kind == "optional_type":
        return numpy_helper.from_optional(value, name)
    if isinstance(value, TensorProto):
        return value
    return numpy_helper.from_array(value, name)


def write_case(case, case_dir):
    os.makedirs(case_dir)
    with open(os.path.join(case_dir, "model.onnx"), "wb") as f:
        f.write(case.model.SerializeToString())
    graph = case.model.graph
    for i, (inputs, outputs) in enumerate(case.data_sets):
        set_dir = os.path.join(case_dir, "test_data_set_%d" % i)
        os.makedirs(set_dir)
        for prefix, values, infos in (("input", inputs, graph.input),
                                      ("output", outputs, graph.output)):
            if len(values) > len(infos):
                raise ValueError("case %s: %d %ss, the graph declares %d"
                                 % (case.name, len(values), prefix,
                                    len(infos)))
            for j, value in enumerate(values):
                proto = proto_for(value, infos[j])
                path = os.path.join(set_dir, "%s_%d.pb" % (prefix, j))
                with open(path, "wb") as f:
                    f.write(proto.SerializeToString())


def main(argv):
    if len(argv) != 2:
        print("usage: gen_onnx_node_data.py DIR", file=sys.stderr)
        return 2
    root = argv[1]
    stamp = "onnx %s, generator %d" % (onnx.__version__, GENERATOR)
    version_path = os.path.join(root, "VERSION")
    node_dir = os.path.join(root, "node")
    try:
        with open(version_path) as f:
            have = f.read().strip()
    except OSError:
        have = None
    if have == stamp and os.path.isdir(node_dir):
        n = sum(1 for e in os.listdir(node_dir) if e.startswith("test_"))
        print("%s: up to date (%s, %d node cases)" % (root, stamp, n))
        return 0

    # The cases compute expected values with overflowing casts, log(0) and
    # the like on purpose; their numpy warnings are noise here.
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        cases = [c for c in node_cases.collect_testcases()
                 if c.kind == "node"]
    os.makedirs(root, exist_ok=True)
    if os.path.exists(version_path):
        os.remove(version_path)
    tmp = node_dir + ".tmp"
    shutil.rmtree(tmp, ignore_errors=True)
    os.makedirs(tmp)
    seen = set()
    for case in cases:
        if case.name in seen:
            raise ValueError("two node cases are named %s" % case.name)
        seen.add(case.name)
        write_case(case, os.path.join(tmp, case.name))
    shutil.rmtree(node_dir, ignore_errors=True)
    os.rename(tmp, node_dir)
    with open(version_path, "w") as f:
        f.write(stamp + "\n")
    print("%s: wrote %d node cases (%s)" % (root, len(cases), stamp))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
