#!/usr/bin/env python3
"""Writes the models of the iteration and sequence-length limits into this
folder (kept in the tree: CI has no onnx package); rerun after a change:

    python3 -m venv /tmp/venv && /tmp/venv/bin/pip install onnx numpy
    /tmp/venv/bin/python tests/e2e/make_limit_models.py

endless_loop.onnx: Loop "spin" with no trip count and a condition that
stays true, doubling v; growing_sequence.onnx: Loop "grow", the same
without end, whose SequenceInsert "append" adds x to a sequence every
iteration.
"""
import os

from onnx import TensorProto, helper

HERE = os.path.dirname(os.path.abspath(__file__))


def save(name, nodes, outputs, inits):
    graph = helper.make_graph(nodes, "g", [], outputs, initializer=inits)
    model = helper.make_model(graph, producer_name="make_limit_models",
                              opset_imports=[helper.make_opsetid("", 17)])
    with open(os.path.join(HERE, name), "wb") as f:
        f.write(model.SerializeToString())


def body(nodes, carried_in, carried_out):
    ins = [helper.make_tensor_value_info("i", TensorProto.INT64, []),
           helper.make_tensor_value_info("cin", TensorProto.BOOL, [])]
    outs = [helper.make_tensor_value_info("cout", TensorProto.BOOL, [])]
    return helper.make_graph(
        [helper.make_node("Identity", ["cin"], ["cout"])] + nodes, "body",
        ins + [carried_in], outs + [carried_out])


def main():
    true = helper.make_tensor("c", TensorProto.BOOL, [], [True])
    v0 = helper.make_tensor("v0", TensorProto.FLOAT, [1], [1.0])
    spin = body([helper.make_node("Add", ["vin", "vin"], ["vout"])],
                helper.make_tensor_value_info("vin", TensorProto.FLOAT, [1]),
                helper.make_tensor_value_info("vout", TensorProto.FLOAT, [1]))
    save("endless_loop.onnx",
         [helper.make_node("Loop", ["", "c", "v0"], ["v"], name="spin",
                           body=spin)],
         [helper.make_tensor_value_info("v", TensorProto.FLOAT, [1])],
         [true, v0])
    x = helper.make_tensor("x", TensorProto.FLOAT, [2], [1.0, 2.0])
    seq = helper.make_tensor_sequence_value_info
    grow = body([helper.make_node("SequenceInsert", ["sin", "x"], ["sout"],
                                  name="append")],
                seq("sin", TensorProto.FLOAT, None),
                seq("sout", TensorProto.FLOAT, None))
    save("growing_sequence.onnx",
         [helper.make_node("SequenceEmpty", [], ["s0"], name="empty"),
          helper.make_node("Loop", ["", "c", "s0"], ["s"], name="grow",
                           body=grow)],
         [seq("s", TensorProto.FLOAT, None)], [true, x])


if __name__ == "__main__":
    main()
