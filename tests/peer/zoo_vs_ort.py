"""Helper of zoo_vs_ort.sh: deterministic inputs for a zoo export, and a
comparison of the outputs 'wmap run' saved with onnxruntime's.

  zoo_vs_ort.py inputs MODEL.onnx DIR
      writes DIR/input_K.pb for every graph input that is not an
      initializer: float inputs from a seeded normal distribution, token ids
      uniform in [0, vocab) where vocab is the row count of the embedding
      table the ids gather from, attention masks of ones, token types 0 for
      the first half of the sequence and 1 for the second.

  zoo_vs_ort.py compare MODEL.onnx INPUTS OUTPUTS LABEL RTOL ATOL
      runs MODEL.onnx on onnxruntime's CPUExecutionProvider with
      INPUTS/input_K.pb and compares every output with OUTPUTS/output_K.pb
      (matched by name): an element passes when
      |wmap - ort| <= ATOL + RTOL * |ort|. Prints one line per output with
      the max abs and max rel error; exits 1 naming the model and output
      when one is beyond the tolerance.
"""

import glob
import os
import sys

import numpy as np
import onnx
import onnxruntime as ort
from onnx import numpy_helper

SEED = 20261202


def fail(msg):
    print("zoo_vs_ort: " + msg, file=sys.stderr)
    sys.exit(1)


def vocab_size(model, name):
    """Rows of the initializer a Gather indexes with input NAME, or None."""
    inits = {t.name: t for t in model.graph.initializer}
    for node in model.graph.node:
        if node.op_type == "Gather" and len(node.input) == 2 and \
                node.input[1] == name and node.input[0] in inits:
            dims = inits[node.input[0]].dims
            if dims:
                return int(dims[0])
    return None


def make_inputs(model_path, out_dir):
    model = onnx.load(model_path, load_external_data=False)
    inits = {t.name for t in model.graph.initializer}
    rng = np.random.default_rng(SEED)
    k = 0
    for vi in model.graph.input:
        if vi.name in inits:
            continue
        tt = vi.type.tensor_type
        shape = []
        for d in tt.shape.dim:
            if not d.HasField("dim_value"):
                fail("%s: input \"%s\" has a symbolic dim \"%s\"; want "
                     "static shapes" % (model_path, vi.name, d.dim_param))
            shape.append(d.dim_value)
        dtype = onnx.helper.tensor_dtype_to_np_dtype(tt.elem_type)
        lname = vi.name.lower()
        if np.issubdtype(dtype, np.floating):
            arr = rng.standard_normal(shape).astype(dtype)
        elif "mask" in lname:
            arr = np.ones(shape, dtype=dtype)
        elif "type" in lname:
            arr = np.zeros(shape, dtype=dtype)
            if shape:
                arr[..., shape[-1] // 2:] = 1
        else:
            vocab = vocab_size(model, vi.name)
            if vocab is None:
                fail("%s: no embedding table found for integer input \"%s\""
                     % (model_path, vi.name))
            arr = rng.integers(0, vocab, size=shape, dtype=dtype)
        t = numpy_helper.from_array(arr, vi.name)
        with open(os.path.join(out_dir, "input_%d.pb" % k), "wb") as f:
            f.write(t.SerializeToString())
        print("  input %s %s %s" % (vi.name, arr.dtype, list(arr.shape)))
        k += 1


def read_tensors(pattern):
    tensors = []
    for path in sorted(glob.glob(pattern),
                       key=lambda p: int(p.rsplit("_", 1)[1][:-3])):
        t = onnx.TensorProto()
        with open(path, "rb") as f:
            t.ParseFromString(f.read())
        tensors.append((t.name, numpy_helper.to_array(t), path))
    return tensors


def compare(model_path, in_dir, out_dir, label, rtol, atol):
    opts = ort.SessionOptions()
    opts.intra_op_num_threads = 2
    feeds = {name: arr for name, arr, _ in
             read_tensors(os.path.join(in_dir, "input_*.pb"))}
    try:
        sess = ort.InferenceSession(model_path, opts,
                                    providers=["CPUExecutionProvider"])
        names = [o.name for o in sess.get_outputs()]
        want = dict(zip(names, sess.run(names, feeds)))
    except Exception as e:  # onnxruntime raises several types
        print("FAIL %s: onnxruntime cannot load or run the export: %s"
              % (label, str(e).strip().splitlines()[0] if str(e) else
                 type(e).__name__))
        return 1
    got = read_tensors(os.path.join(out_dir, "output_*.pb"))
    if len(got) != len(names):
        fail("%s: wmap saved %d outputs, onnxruntime gives %d (%s)"
             % (label, len(got), len(names), ", ".join(names)))
    bad = []
    for k, (name, g, path) in enumerate(got):
        if not name:
            name = names[k]
        if name not in want:
            fail("%s: %s names output \"%s\"; onnxruntime's outputs: %s"
                 % (label, path, name, ", ".join(names)))
        w = want[name]
        if g.shape != w.shape or g.dtype != w.dtype:
            bad.append("%s: output \"%s\" is %s %s, onnxruntime gives %s %s"
                       % (label, name, g.dtype, list(g.shape), w.dtype,
                          list(w.shape)))
            continue
        gd = g.astype(np.float64)
        wd = w.astype(np.float64)
        if not (np.all(np.isfinite(gd)) and np.all(np.isfinite(wd))):
            nonfinite = np.sum(~np.isfinite(gd)) + np.sum(~np.isfinite(wd))
            if not np.array_equal(np.isfinite(gd), np.isfinite(wd)):
                bad.append("%s: output \"%s\" has %d non-finite values that "
                           "differ" % (label, name, nonfinite))
                continue
        diff = np.abs(gd - wd)
        diff[~np.isfinite(diff)] = 0.0
        rel = diff / np.maximum(np.abs(wd), np.finfo(np.float64).tiny)
        over = diff > atol + rtol * np.abs(wd)
        i = int(np.argmax(diff)) if diff.size else 0
        print("  %-28s %-14s %-16s max abs %.3g, max rel %.3g, "
              "max |ort| %.3g, %d of %d beyond"
              % (label, name, list(w.shape),
                 float(diff.max()) if diff.size else 0.0,
                 float(rel.max()) if rel.size else 0.0,
                 float(np.abs(wd).max()) if wd.size else 0.0,
                 int(over.sum()), diff.size))
        if over.any():
            j = int(np.argmax(over.reshape(-1)))
            bad.append("%s: output \"%s\" differs beyond rtol %g atol %g at "
                       "%d of %d elements; first at flat index %d: wmap %r, "
                       "onnxruntime %r; largest at %d: wmap %r, onnxruntime %r"
                       % (label, name, rtol, atol, int(over.sum()), diff.size,
                          j, float(gd.reshape(-1)[j]),
                          float(wd.reshape(-1)[j]), i,
                          float(gd.reshape(-1)[i]), float(wd.reshape(-1)[i])))
    for line in bad:
        print("FAIL " + line)
    return 1 if bad else 0


def main(argv):
    if len(argv) == 4 and argv[1] == "inputs":
        make_inputs(argv[2], argv[3])
        return 0
    if len(argv) == 8 and argv[1] == "compare":
        return compare(argv[2], argv[3], argv[4], argv[5], float(argv[6]),
                       float(argv[7]))
    print("usage: zoo_vs_ort.py inputs MODEL.onnx DIR\n"
          "       zoo_vs_ort.py compare MODEL.onnx INPUTS OUTPUTS LABEL "
          "RTOL ATOL", file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv))
