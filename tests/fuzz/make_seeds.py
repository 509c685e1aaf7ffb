#!/usr/bin/env python3
"""Writes the hand-made seeds of corpus/ (seed_*): small valid models and
tensors that reach every attribute kind, type kind and typed field. The
ONNX unit tests (src/onnx/import_test.c) also load them and check what
they hold, so change both together. The files are kept in the tree (CI
has no onnx package); rerun with an onnx venv:

    /tmp/venv/bin/python tests/fuzz/make_seeds.py
"""
import os

import numpy as np
import onnx
from onnx import AttributeProto, TensorProto, helper, numpy_helper

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "corpus")
F = TensorProto.FLOAT


def save(name, proto):
    with open(os.path.join(OUT, name), "wb") as f:
        f.write(proto.SerializeToString())


def vi(name, elem=F, shape=None):
    return helper.make_tensor_value_info(name, elem, shape)


def attrs_model():
    """One custom node with every attribute kind."""
    body = helper.make_graph(
        [helper.make_node("Add", ["x", "w"], ["sum"], name="inner_add")],
        "body", [], [vi("sum", F, [2])])
    other = helper.make_graph(
        [helper.make_node("Neg", ["x"], ["neg"], name="inner_neg")],
        "other", [], [vi("neg", F, [2])])
    seq_type = helper.make_sequence_type_proto(
        helper.make_tensor_type_proto(F, ["N", 3]))
    node = helper.make_node(
        "Custom", ["x"], ["y"], name="every_attr", domain="test.domain",
        doc_string="a node with every attribute kind",
        f=1.5, i=-7, s=b"text\0with nul",
        t=helper.make_tensor("t", TensorProto.INT64, [2], [4, 5]),
        g=body, floats=[0.5, -1.0], ints=[1, 2, 3], strings=[b"a", b"bc"],
        tensors=[helper.make_tensor("t0", F, [1], [2.0]),
                 helper.make_tensor("t1", TensorProto.INT32, [], [9])],
        graphs=[body, other], empty_ints=[])
    node.attribute.append(helper.make_attribute("tp", seq_type))
    node.attribute.append(helper.make_attribute(
        "tps", [helper.make_tensor_type_proto(TensorProto.INT8, [1]),
                helper.make_optional_type_proto(
                    helper.make_tensor_type_proto(F, None))]))
    untyped = helper.make_attribute("untyped", 42)
    untyped.ClearField("type")  # IR version 1 style: the kind is guessed
    node.attribute.append(untyped)
    w = numpy_helper.from_array(np.array([1, 2], np.float32), "w")
    labels = helper.make_tensor("labels", TensorProto.STRING, [2],
                                [b"cat", b""])
    g = helper.make_graph([node], "attrs", [vi("x", F, [2])],
                          [vi("y", F, [2])], initializer=[w, labels],
                          doc_string="graph doc")
    m = helper.make_model(
        g, producer_name="make_seeds", producer_version="1.0",
        domain="org.wmap.test", model_version=3, doc_string="model doc",
        opset_imports=[helper.make_opsetid("", 17),
                       helper.make_opsetid("test.domain", 2)])
    helper.set_model_props(m, {"author": "wmap", "license": "MIT"})
    return m


def types_model():
    """Symbolic dims and sequence/optional/map/sparse value types."""
    seq = helper.make_sequence_type_proto(
        helper.make_tensor_type_proto(F, [2, "K"]))
    opt = helper.make_optional_type_proto(
        helper.make_sequence_type_proto(
            helper.make_tensor_type_proto(TensorProto.INT64, None)))
    mp = onnx.TypeProto()
    mp.map_type.key_type = TensorProto.STRING
    mp.map_type.value_type.CopyFrom(helper.make_tensor_type_proto(F, [1]))
    sparse = helper.make_sparse_tensor_type_proto(F, [4, 4])
    x_type = helper.make_tensor_type_proto(F, ["N", None, 3])
    nodes = [helper.make_node("Identity", [n], [n + "_out"])
             for n in ("x", "s", "o", "m", "sp")]
    inputs = [helper.make_value_info("x", x_type),
              helper.make_value_info("s", seq),
              helper.make_value_info("o", opt),
              helper.make_value_info("m", mp),
              helper.make_value_info("sp", sparse)]
    outputs = [helper.make_value_info(n + "_out", t)
               for n, t in (("x", x_type), ("s", seq), ("o", opt),
                            ("m", mp), ("sp", sparse))]
    g = helper.make_graph(nodes, "types", inputs, outputs)
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])


def old_ir_model():
    """IR version 3: the initializer W is also listed as a graph input."""
    w = numpy_helper.from_array(np.array([[1, 2], [3, 4]], np.float32), "W")
    g = helper.make_graph(
        [helper.make_node("Add", ["x", "W"], ["y"])], "old",
        [vi("x", F, [2, 2]), vi("W", F, [2, 2])], [vi("y", F, [2, 2])],
        initializer=[w])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 7)])
    m.ir_version = 3
    return m


def outer_model():
    """If branches and a Loop body two levels down that use outer values."""
    loop_body = helper.make_graph(
        [helper.make_node("Add", ["acc_in", "b"], ["acc_out"]),
         helper.make_node("Identity", ["cond_in"], ["cond_out"])],
        "loop_body",
        [vi("iter", TensorProto.INT64, []), vi("cond_in", TensorProto.BOOL,
                                              []), vi("acc_in", F, [1])],
        [vi("cond_out", TensorProto.BOOL, []), vi("acc_out", F, [1])])
    then_g = helper.make_graph(
        [helper.make_node("Loop", ["n", "", "a"], ["looped"],
                          body=loop_body)],
        "then", [], [vi("looped", F, [1])])
    else_g = helper.make_graph(
        [helper.make_node("Sub", ["a", "b"], ["diff"])],
        "else", [], [vi("diff", F, [1])])
    n = numpy_helper.from_array(np.array(3, np.int64), "n")
    g = helper.make_graph(
        [helper.make_node("If", ["c"], ["r"], then_branch=then_g,
                          else_branch=else_g)],
        "outer", [vi("c", TensorProto.BOOL, []), vi("a", F, [1]),
                  vi("b", F, [1])], [vi("r", F, [1])], initializer=[n])
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 16)])


def constants_model():
    """Constant nodes with every value kind."""
    kinds = {
        "value": helper.make_tensor("v", TensorProto.FLOAT16, [2],
                                    np.array([1, -2], np.float16)),
        "value_float": 2.5, "value_floats": [1.0, 2.0],
        "value_int": 4, "value_ints": [5, 6],
        "value_string": "hello", "value_strings": ["x", "yz"],
    }
    nodes = [helper.make_node("Constant", [], [k], name="c_" + k,
                              **{k: v}) for k, v in kinds.items()]
    g = helper.make_graph(nodes, "constants", [],
                          [helper.make_value_info(k, onnx.TypeProto())
                           for k in kinds])
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])


def external_model(location, offset=None, length=None):
    """An initializer in the fuzz target's fixture folder (w.bin holds
    bytes 0..255, sub/x.bin 16 bytes; escape.bin links outside)."""
    t = TensorProto(name="w", data_type=F, dims=[4],
                    data_location=TensorProto.EXTERNAL)
    for key, value in (("location", location), ("offset", offset),
                       ("length", length)):
        if value is not None:
            e = t.external_data.add()
            e.key, e.value = key, str(value)
    g = helper.make_graph([], "external", [], [vi("w", F, [4])],
                          initializer=[t])
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])


def typed_tensors():
    """TensorProtos that use the typed fields instead of raw_data."""
    out = {}
    t = helper.make_tensor("f16", TensorProto.FLOAT16, [3],
                           np.array([1, -2, 0.5], np.float16))
    out["seed_typed_float16.pb"] = t  # int32_data carries the bits
    t = TensorProto(name="i8", data_type=TensorProto.INT8, dims=[2, 2])
    t.int32_data.extend([-128, 127, 0, 5])
    out["seed_typed_int8.pb"] = t
    t = TensorProto(name="u32", data_type=TensorProto.UINT32, dims=[2])
    t.uint64_data.extend([0, 4294967295])
    out["seed_typed_uint32.pb"] = t
    t = TensorProto(name="c64", data_type=TensorProto.COMPLEX64, dims=[2])
    t.float_data.extend([1, 2, 3, 4])
    out["seed_typed_complex64.pb"] = t
    t = TensorProto(name="s", data_type=TensorProto.STRING, dims=[3])
    t.string_data.extend([b"one", b"", b"three"])
    out["seed_typed_string.pb"] = t
    return out


def main():
    save("seed_attrs.onnx", attrs_model())
    save("seed_types.onnx", types_model())
    save("seed_old_ir.onnx", old_ir_model())
    save("seed_outer.onnx", outer_model())
    save("seed_constants.onnx", constants_model())
    save("seed_external.onnx", external_model("w.bin", 8, 16))
    save("seed_external_escape.onnx", external_model("escape.bin"))
    for name, t in typed_tensors().items():
        save(name, t)


if __name__ == "__main__":
    main()
