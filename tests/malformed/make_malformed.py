#!/usr/bin/env python3
"""Writes one small malformed ONNX model per failure class into this folder
and lists them in expected.txt as FILE<TAB>FRAGMENT, where FRAGMENT is part
of the one-line error wmap must give. The .onnx files are kept in the tree
(CI has no onnx package); rerun this after changing a case:

    python3 -m venv /tmp/venv && /tmp/venv/bin/pip install onnx numpy
    /tmp/venv/bin/python tests/malformed/make_malformed.py
"""
import os

import onnx
from onnx import TensorProto, helper

HERE = os.path.dirname(os.path.abspath(__file__))
CASES = []  # (file, fragment)


def model(nodes, inputs=(), outputs=(), inits=(), value_info=()):
    graph = helper.make_graph(list(nodes), "g", list(inputs), list(outputs),
                              initializer=list(inits),
                              value_info=list(value_info))
    return helper.make_model(graph, producer_name="make_malformed",
                             opset_imports=[helper.make_opsetid("", 17)])


def varint(v):
    b = bytearray()
    while True:
        b.append((v & 0x7F) | (0x80 if v > 0x7F else 0))
        v >>= 7
        if not v:
            return bytes(b)


def ld(field, payload):
    """A length-delimited protobuf field."""
    return varint(field << 3 | 2) + varint(len(payload)) + payload


def out(name, elem=TensorProto.FLOAT, shape=None):
    return helper.make_tensor_value_info(name, elem, shape)


def write(name, data, fragment):
    if isinstance(data, onnx.ModelProto):
        data = data.SerializeToString()
    with open(os.path.join(HERE, name), "wb") as f:
        f.write(data)
    CASES.append((name, fragment))


def raw_tensor(name, dtype, dims, raw=None):
    t = TensorProto()
    t.name = name
    t.data_type = dtype
    t.dims.extend(dims)
    if raw is not None:
        t.raw_data = raw
    return t


def init_model(tensor):
    """A model whose only output is the initializer |tensor|."""
    return model([], outputs=[out(tensor.name)],
                 inits=[tensor])


def relu_model():
    w = helper.make_tensor("w", TensorProto.FLOAT, [2, 3], [1, 2, 3, 4, 5, 6])
    return model([helper.make_node("Relu", ["w"], ["y"], name="relu")],
                 outputs=[out("y", shape=[2, 3])], inits=[w])


def external(name, location, offset=None, length=None, dims=(4,)):
    t = raw_tensor("w", TensorProto.FLOAT, list(dims))
    t.data_location = TensorProto.EXTERNAL
    entries = [("location", location)]
    if offset is not None:
        entries.append(("offset", str(offset)))
    if length is not None:
        entries.append(("length", str(length)))
    for k, v in entries:
        e = t.external_data.add()
        e.key, e.value = k, v
    return init_model(t)


def main():
    good = relu_model().SerializeToString()
    write("truncated.onnx", good[:-7], "truncated or corrupt protobuf")
    write("garbage.onnx", b"this is not an onnx model\n" * 4,
          "truncated or corrupt protobuf")
    write("raw_data_size.onnx",
          init_model(raw_tensor("w", TensorProto.FLOAT, [2, 3], b"\0" * 20)),
          "raw_data holds 20 bytes, want 24 for float[2,3]")
    write("negative_dim.onnx",
          init_model(raw_tensor("w", TensorProto.FLOAT, [-2, 3], b"")),
          "dim 0 is negative (-2)")
    big = 1 << 40
    write("count_overflow.onnx",
          init_model(raw_tensor("w", TensorProto.FLOAT, [big, big, big],
                                b"\0" * 4)),
          "overflows")
    write("unknown_dtype.onnx",
          init_model(raw_tensor("w", 99, [1], b"\0" * 4)),
          "unknown data_type 99")
    t = raw_tensor("w", TensorProto.FLOAT, [2, 3])
    t.float_data.extend([1, 2, 3, 4, 5])
    write("typed_count.onnx", init_model(t),
          "float_data has 5 values, want 6 for float[2,3]")
    t = raw_tensor("w", TensorProto.UINT8, [2])
    t.int32_data.extend([7, 300])
    write("typed_range.onnx", init_model(t),
          "int32_data[1] = 300 does not fit uint8")
    write("empty_op_type.onnx",
          model([helper.make_node("", ["x"], ["y"], name="nameless_op")],
                inputs=[out("x")], outputs=[out("y")]),
          "node \"nameless_op\" has an empty op_type")
    m = relu_model()
    m.ClearField("graph")
    write("no_graph.onnx", m, "model has no graph")
    m = relu_model()
    m.ClearField("ir_version")
    write("no_ir_version.onnx", m, "model has no ir_version")
    node = helper.make_node("Constant", [], ["y"], name="const")
    attr = node.attribute.add()
    attr.name = "value"
    attr.type = onnx.AttributeProto.TENSOR
    write("attr_no_value.onnx", model([node], outputs=[out("y")]),
          "attribute \"value\" has type tensor but no value")
    node = helper.make_node("Constant", [], ["y"], name="const")
    attr = node.attribute.add()
    attr.name = "value"
    attr.type = onnx.AttributeProto.FLOAT
    data = model([node], outputs=[out("y")]).SerializeToString()
    # protobuf refuses unknown enum values, so patch type 1 -> 42 (field
    # 20, varint: a0 01).
    assert data.count(b"\xa0\x01\x01") == 1
    write("attr_unknown_type.onnx", data.replace(b"\xa0\x01\x01",
                                                 b"\xa0\x01\x2a"),
          "attribute \"value\" has unknown type 42")
    sparse = helper.make_sparse_tensor(
        helper.make_tensor("v", TensorProto.FLOAT, [1], [1.0]),
        helper.make_tensor("i", TensorProto.INT64, [1], [0]), [3])
    node = helper.make_node("Constant", [], ["y"], name="sparse_const",
                            sparse_value=sparse)
    write("sparse_attr.onnx", model([node], outputs=[out("y")]),
          "node \"sparse_const\" (Constant): attribute \"sparse_value\": "
          "sparse tensors")
    write("rank_too_high.onnx",
          init_model(raw_tensor("w", TensorProto.FLOAT, [1] * 9, b"\0" * 4)),
          "rank 9 exceeds the maximum 8")
    write("type_rank_too_high.onnx",
          model([helper.make_node("Relu", ["x"], ["y"])],
                inputs=[out("x", shape=[1] * 9)], outputs=[out("y")]),
          "input \"x\": rank 9 exceeds the maximum 8")
    t = raw_tensor("s", TensorProto.STRING, [1], b"abcd")
    write("string_raw_data.onnx", init_model(t),
          "string tensor has raw_data")
    write("undefined_input.onnx",
          model([helper.make_node("Relu", ["nowhere"], ["y"], name="r")],
                outputs=[out("y")]),
          "input 0 \"nowhere\" is not defined")
    write("duplicate_output.onnx",
          model([helper.make_node("Relu", ["x"], ["y"], name="a"),
                 helper.make_node("Relu", ["x"], ["y"], name="b")],
                inputs=[out("x")], outputs=[out("y")]),
          "output \"y\" is already defined")
    write("cycle.onnx",
          model([helper.make_node("Relu", ["b"], ["a"], name="first"),
                 helper.make_node("Relu", ["a"], ["b"], name="second")],
                outputs=[out("a")]),
          "has a cycle")
    # A TypeProto nested far deeper than any real model; protobuf itself
    # refuses to build it, so the bytes are written by hand.
    tp = ld(1, b"\x08\x01")  # TypeProto{tensor_type{elem_type: FLOAT}}
    for _ in range(120):
        tp = ld(4, ld(1, tp))  # TypeProto{sequence_type{elem_type: tp}}
    m = model([helper.make_node("Identity", ["x"], ["y"])],
              outputs=[out("y")])
    graph = m.graph.SerializeToString() + ld(11, ld(1, b"x") + ld(2, tp))
    m.ClearField("graph")
    write("deep_nesting.onnx", m.SerializeToString() + ld(7, graph),
          "nest deeper than 100")
    # External data: escapes, a missing file, a range past the file end.
    write("external_dotdot.onnx", external("x", "../outside.bin"),
          "uses \"..\"")
    write("external_absolute.onnx", external("x", "/etc/passwd"),
          "is an absolute path")
    write("external_missing.onnx", external("x", "no_such_file.bin"),
          "\"no_such_file.bin\" does not exist")
    with open(os.path.join(HERE, "external_short.bin"), "wb") as f:
        f.write(b"\0" * 8)
    write("external_beyond.onnx",
          external("x", "external_short.bin", offset=4, length=16),
          "offset 4 + length 16 runs past its end")
    write("external_length.onnx",
          external("x", "external_short.bin", length=8),
          "external data length is 8 bytes, want 16")
    # Issue 16: refused at import, naming the node, attribute or tensor and
    # the value.
    conv = helper.make_node("Conv", ["x", "w"], ["y"], name="conv",
                            strides=[1, 1])
    conv.attribute[0].CopyFrom(helper.make_attribute("strides", 2.5))
    w = helper.make_tensor("w", TensorProto.FLOAT, [1, 1, 1, 1], [1.0])
    write("attr_wrong_type.onnx",
          model([conv], inputs=[out("x", shape=[1, 1, 4, 4])],
                outputs=[out("y")], inits=[w]),
          "node \"conv\" (Conv): attribute \"strides\" is float (2.5); "
          "the operator wants ints")
    m = relu_model()
    m.opset_import[0].version = 99
    write("opset_too_new.onnx", m,
          "opset_import of domain \"ai.onnx\" is version 99; wmap knows "
          "up to 28")
    write("negative_dim_value.onnx",
          model([helper.make_node("Relu", ["x"], ["y"])],
                inputs=[out("x", shape=[2, -3])], outputs=[out("y")]),
          "input \"x\": dim 1 has dim_value -3")
    write("duplicate_graph_output.onnx",
          model([helper.make_node("Relu", ["x"], ["y"])],
                inputs=[out("x")], outputs=[out("y"), out("y")]),
          "outputs 0 and 1 are both named \"y\"")
    # Read as a C string the location would be "external_short.bin", a
    # file that fits: the model would load.
    write("external_nul.onnx",
          external("x", "external_short.bin\0../../etc/passwd", dims=(2,)),
          "TensorProto \"w\": StringStringEntryProto.value "
          "\"external_short.bin?../../etc/passwd\" holds a NUL byte")

    with open(os.path.join(HERE, "expected.txt"), "w") as f:
        for name, fragment in CASES:
            assert "\t" not in fragment and "\n" not in fragment
            f.write(f"{name}\t{fragment}\n")


if __name__ == "__main__":
    main()
