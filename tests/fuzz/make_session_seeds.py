#!/usr/bin/env python3
"""Writes session_corpus/ for session_run_fuzz from the ONNX node tests
(Debian package libonnx-testdata): for each set of operator types, the
smallest models (at most PER_OPS, each under MAX_BYTES), as fuzz inputs
with an empty edit program (two zero bytes, then the model). The test's
input data (test_data_set_0) is added to the model as initializers of its
tensor inputs, so that the seeds run on meaningful values (indices in
range, valid shapes) and the fuzzer's edits reach them. Needs no onnx
package: the models are read and written in the protobuf wire format.
Rerun:

    python3 tests/fuzz/make_session_seeds.py [NODE_TEST_FOLDER]
"""
import glob
import os
import sys

NODE = "/usr/share/libonnx-testdata/data/node"
OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)),
                   "session_corpus")
PER_OPS = 2      # models kept per set of op types
MAX_BYTES = 8192  # larger models are left out
PREFIX = "seed_"


def varint(b, i):
    v = shift = 0
    while True:
        c = b[i]
        i += 1
        v |= (c & 0x7F) << shift
        shift += 7
        if c < 0x80:
            return v, i


def fields(b):
    """Yields (field number, wire type, value) of one message."""
    i = 0
    while i < len(b):
        key, i = varint(b, i)
        num, wt = key >> 3, key & 7
        if wt == 0:
            v, i = varint(b, i)
        elif wt == 1:
            v, i = b[i:i + 8], i + 8
        elif wt == 5:
            v, i = b[i:i + 4], i + 4
        elif wt == 2:
            n, i = varint(b, i)
            v, i = b[i:i + n], i + n
        else:
            raise ValueError("wire type %d" % wt)
        yield num, wt, v


def key(num, wt):
    return enc_varint(num << 3 | wt)


def enc_varint(v):
    out = bytearray()
    while True:
        b = v & 0x7F
        v >>= 7
        if v:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def ld(num, payload):
    """A length-delimited field."""
    return key(num, 2) + enc_varint(len(payload)) + payload


def tensor_inputs(graph):
    """Names of the graph inputs of tensor type, in order (None for the
    others)."""
    names = []
    for num, wt, vi in fields(graph):
        if num == 11 and wt == 2:  # GraphProto.input
            name, is_tensor = None, False
            for vnum, vwt, v in fields(vi):
                if vnum == 1 and vwt == 2:
                    name = v
                elif vnum == 2 and vwt == 2:  # TypeProto
                    is_tensor = any(t == 1 for t, _, _ in fields(v))
            names.append(name if is_tensor else None)
    return names


def with_data(model, folder):
    """|model| whose tensor inputs get test_data_set_0's values as
    initializers (unchanged when the data does not fit)."""
    out = bytearray()
    for num, wt, v in fields(model):
        if num != 7 or wt != 2:
            out += raw_field(num, wt, v)
            continue
        graph = bytearray(v)
        for i, name in enumerate(tensor_inputs(v)):
            pb = os.path.join(folder, "test_data_set_0", "input_%d.pb" % i)
            if name is None or not os.path.exists(pb):
                continue
            tensor = bytearray()
            for tnum, twt, tv in fields(open(pb, "rb").read()):
                if tnum != 8:  # TensorProto.name: set below
                    tensor += raw_field(tnum, twt, tv)
            graph += ld(5, bytes(tensor) + ld(8, name))
        out += ld(7, bytes(graph))
    return bytes(out)


def raw_field(num, wt, v):
    if wt == 0:
        return key(num, 0) + enc_varint(v)
    if wt == 2:
        return ld(num, v)
    return key(num, wt) + v


def op_types(model):
    """The sorted op types of the main graph's nodes."""
    ops = set()
    for num, wt, graph in fields(model):
        if num == 7 and wt == 2:  # ModelProto.graph
            for gnum, gwt, node in fields(graph):
                if gnum == 1 and gwt == 2:  # GraphProto.node
                    for nnum, nwt, v in fields(node):
                        if nnum == 4 and nwt == 2:  # NodeProto.op_type
                            ops.add(v.decode())
    return tuple(sorted(ops))


def main():
    node = sys.argv[1] if len(sys.argv) > 1 else NODE
    groups = {}
    for path in sorted(glob.glob(os.path.join(node, "*", "model.onnx"))):
        data = open(path, "rb").read()
        try:
            ops = op_types(data)
            data = with_data(data, os.path.dirname(path))
        except (ValueError, IndexError, UnicodeDecodeError):
            continue
        if len(data) > MAX_BYTES:
            continue
        name = os.path.basename(os.path.dirname(path))
        groups.setdefault(ops, []).append((len(data), name, data))
    os.makedirs(OUT, exist_ok=True)
    for old in glob.glob(os.path.join(OUT, PREFIX + "*")):
        os.remove(old)
    count = total = 0
    for ops in sorted(groups):
        for size, name, data in sorted(groups[ops])[:PER_OPS]:
            with open(os.path.join(OUT, PREFIX + name[5:]), "wb") as f:
                f.write(b"\0\0" + data)
            count += 1
            total += size + 2
    print("wrote %d seeds, %d bytes, to %s" % (count, total, OUT))


if __name__ == "__main__":
    main()
