"""Inputs and output checks for the real models; run with a python that has
onnx, numpy (and onnxruntime for 'compare'), e.g. BUILD/.venv-peer.

  real_io.py inputs NAME DIR
      writes DIR/input_K.pb for model NAME of models.json, one per entry of
      its 'inputs' in graph-input order, values drawn with a seed fixed per
      model ('normal', 'uniform' in [low, high), 'integers' in [low, high)).

  real_io.py static NAME MODEL.onnx OUT.onnx
      writes a copy of MODEL.onnx whose graph inputs have the static shapes
      of model NAME's 'inputs' (for 'wmap map' where --dim cannot bind the
      dims: several dims under one name, or nameless ones).

  real_io.py compare MODEL.onnx INPUTS OUTPUTS LABEL RTOL ATOL
      runs MODEL.onnx on onnxruntime (CPUExecutionProvider, 2 threads) with
      INPUTS/input_K.pb and compares every output with OUTPUTS/output_K.pb
      (by name, else by position): an element passes when
      |wmap - ort| <= ATOL + RTOL * |ort|. Max rel is taken with |ort|
      floored at 1e-3 of the output's largest |ort|. Prints one line per
      output, then
      one JSON line {"label", "max_abs", "max_rel", "max_ort", "beyond",
      "ok", "problems"}; exits 1 when an output differs beyond the
      tolerance, in shape or in type.
"""

import glob
import json
import os
import sys
import zlib

import numpy as np
import onnx
from onnx import numpy_helper

HERE = os.path.dirname(os.path.abspath(__file__))
SEED = 20261203


def manifest_model(name):
    with open(os.path.join(HERE, "models.json")) as f:
        for m in json.load(f)["models"]:
            if m["name"] == name:
                return m
    raise SystemExit("real_io: no model \"%s\" in models.json" % name)


def make_inputs(name, out_dir):
    m = manifest_model(name)
    rng = np.random.default_rng(SEED + zlib.crc32(name.encode()))
    os.makedirs(out_dir, exist_ok=True)
    for k, (iname, spec) in enumerate(m["inputs"].items()):
        shape, dtype = spec["shape"], np.dtype(spec["dtype"])
        how = spec.get("values", "normal")
        if how == "normal":
            arr = rng.standard_normal(shape)
        elif how == "uniform":
            arr = rng.uniform(spec["low"], spec["high"], size=shape)
        elif how == "integers":
            arr = rng.integers(spec["low"], spec["high"], size=shape)
        else:
            raise SystemExit("real_io: model \"%s\" input \"%s\": unknown "
                             "values \"%s\"" % (name, iname, how))
        t = numpy_helper.from_array(arr.astype(dtype), iname)
        with open(os.path.join(out_dir, "input_%d.pb" % k), "wb") as f:
            f.write(t.SerializeToString())


def make_static(name, model_path, out_path):
    m = manifest_model(name)
    model = onnx.load(model_path)
    for vi in model.graph.input:
        if vi.name not in m["inputs"]:
            continue
        shape = m["inputs"][vi.name]["shape"]
        dims = vi.type.tensor_type.shape.dim
        if len(dims) != len(shape):
            raise SystemExit("real_io: model \"%s\" input \"%s\" has rank "
                             "%d, models.json gives %s"
                             % (name, vi.name, len(dims), shape))
        for d, v in zip(dims, shape):
            d.Clear()
            d.dim_value = v
    onnx.save(model, out_path)


def read_tensors(pattern):
    out = []
    for path in sorted(glob.glob(pattern),
                       key=lambda p: int(p.rsplit("_", 1)[1][:-3])):
        t = onnx.TensorProto()
        with open(path, "rb") as f:
            t.ParseFromString(f.read())
        out.append((t.name, numpy_helper.to_array(t), path))
    return out


def compare(model, in_dir, out_dir, label, rtol, atol):
    import onnxruntime as ort
    opts = ort.SessionOptions()
    opts.intra_op_num_threads = 2
    feeds = {n: a for n, a, _ in read_tensors(os.path.join(in_dir,
                                                           "input_*.pb"))}
    sess = ort.InferenceSession(model, opts,
                                providers=["CPUExecutionProvider"])
    names = [o.name for o in sess.get_outputs()]
    want = dict(zip(names, sess.run(names, feeds)))
    got = read_tensors(os.path.join(out_dir, "output_*.pb"))
    res = {"label": label, "max_abs": 0.0, "max_rel": 0.0, "max_ort": 0.0,
           "beyond": 0, "ok": True, "problems": []}
    if len(got) != len(names):
        res["problems"].append("wmap saved %d outputs, onnxruntime gives %d"
                               % (len(got), len(names)))
    for k, (name, g, path) in enumerate(got):
        name = name or (names[k] if k < len(names) else "")
        if name not in want:
            res["problems"].append("%s names output \"%s\", not one of %s"
                                   % (path, name, ", ".join(names)))
            continue
        w = want[name]
        if g.shape != w.shape or g.dtype != w.dtype:
            res["problems"].append("output \"%s\" is %s %s, onnxruntime "
                                   "gives %s %s" % (name, g.dtype,
                                                    list(g.shape), w.dtype,
                                                    list(w.shape)))
            continue
        gd, wd = g.astype(np.float64), w.astype(np.float64)
        if not np.array_equal(np.isfinite(gd), np.isfinite(wd)):
            res["problems"].append("output \"%s\": non-finite values differ"
                                   % name)
            continue
        diff = np.abs(gd - wd)
        diff[~np.isfinite(diff)] = 0.0
        # Relative error where |ort| is at least 1e-3 of its largest value:
        # near zero a relative error says nothing.
        scale = float(np.abs(wd).max()) if wd.size else 0.0
        rel = diff / np.maximum(np.abs(wd), max(1e-3 * scale, 1e-30))
        over = diff > atol + rtol * np.abs(wd)
        ma = float(diff.max()) if diff.size else 0.0
        mr = float(rel.max()) if rel.size else 0.0
        mo = float(np.abs(wd[np.isfinite(wd)]).max()) if wd.size else 0.0
        print("  %-18s %-28s %-18s max abs %.3g, max rel %.3g, max |ort| "
              "%.3g, %d of %d beyond" % (label, name, list(w.shape), ma, mr,
                                         mo, int(over.sum()), diff.size))
        res["max_abs"] = max(res["max_abs"], ma)
        res["max_rel"] = max(res["max_rel"], mr)
        res["max_ort"] = max(res["max_ort"], mo)
        res["beyond"] += int(over.sum())
        if over.any():
            i = int(np.argmax(diff.reshape(-1)))
            res["problems"].append(
                "output \"%s\" differs beyond rtol %g atol %g at %d of %d "
                "elements; largest at flat index %d: wmap %r, onnxruntime %r"
                % (name, rtol, atol, int(over.sum()), diff.size, i,
                   float(gd.reshape(-1)[i]), float(wd.reshape(-1)[i])))
    res["ok"] = not res["problems"]
    for p in res["problems"]:
        print("FAIL %s: %s" % (label, p))
    print(json.dumps(res))
    return 0 if res["ok"] else 1


def main(argv):
    if len(argv) == 4 and argv[1] == "inputs":
        make_inputs(argv[2], argv[3])
        return 0
    if len(argv) == 5 and argv[1] == "static":
        make_static(argv[2], argv[3], argv[4])
        return 0
    if len(argv) == 8 and argv[1] == "compare":
        return compare(argv[2], argv[3], argv[4], argv[5], float(argv[6]),
                       float(argv[7]))
    print(__doc__.strip(), file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv))
