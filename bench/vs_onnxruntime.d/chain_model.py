"""Writes the host-overhead model of 'bench/vs_onnxruntime --overhead'.

  chain_model.py OUT.onnx NODES DIR

A chain of NODES tiny nodes on float [1,16]: Add of a [16] initializer,
then Relu, alternating (Add, Relu, Add, Relu, ...), opset 17, one input
"x" and one output "y"; DIR/input_0.pb gets x from a seeded normal
distribution. The arithmetic is negligible, so the time of one run over
NODES is what each runtime spends per node on the host (dispatch,
allocation, bookkeeping).
"""

import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper


def main(argv):
    if len(argv) != 4:
        print(__doc__.strip(), file=sys.stderr)
        return 2
    out, n, in_dir = argv[1], int(argv[2]), argv[3]
    if n < 1:
        print("chain_model: NODES %d: want >= 1" % n, file=sys.stderr)
        return 2
    rng = np.random.default_rng(20261203)
    bias = numpy_helper.from_array(
        rng.standard_normal(16).astype(np.float32) * 0.01, "b")
    nodes = []
    prev = "x"
    for i in range(n):
        name = "y" if i == n - 1 else "t%d" % i
        if i % 2 == 0:
            nodes.append(helper.make_node("Add", [prev, "b"], [name],
                                          name="add_%d" % i))
        else:
            nodes.append(helper.make_node("Relu", [prev], [name],
                                          name="relu_%d" % i))
        prev = name
    graph = helper.make_graph(
        nodes, "chain_%d" % n,
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 16])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 16])],
        [bias])
    model = helper.make_model(graph, producer_name="wmap-bench",
                              opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.checker.check_model(model)
    onnx.save(model, out)
    os.makedirs(in_dir, exist_ok=True)
    x = numpy_helper.from_array(
        rng.standard_normal((1, 16)).astype(np.float32), "x")
    with open(os.path.join(in_dir, "input_0.pb"), "wb") as f:
        f.write(x.SerializeToString())
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
