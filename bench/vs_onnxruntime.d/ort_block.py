"""One measuring block of onnxruntime for bench/vs_onnxruntime; run with
the venv's python, in a fresh process per block (as 'wmap bench' forks one
per block).

  ort_block.py MODEL.onnx INPUTS THREADS MIN_TIME_S MIN_ITERS

Opens an InferenceSession on CPUExecutionProvider with intra_op_num_threads
= THREADS, inter_op_num_threads = 1 and the default graph optimization
level (ORT_ENABLE_ALL), feeds INPUTS/input_K.pb, runs warm-up iterations
(at least 1 and at least 10 % of MIN_TIME_S), then timed iterations until
at least MIN_TIME_S seconds and MIN_ITERS iterations have passed; one
sample is the time.perf_counter_ns() around one sess.run. Prints one line
of JSON: {"samples_ns": [...], "warmup": N, "version": "...",
"rss_before_session_kb": K} (the peak RSS of the process after the imports,
before the session). Session creation and the warm-up are not timed.
"""

import glob
import json
import os
import resource
import sys
import time

import onnx
import onnxruntime as ort
from onnx import numpy_helper


def fail(msg):
    print("ort_block: " + msg, file=sys.stderr)
    sys.exit(1)


def read_inputs(in_dir):
    feeds = {}
    paths = glob.glob(os.path.join(in_dir, "input_*.pb"))
    for path in sorted(paths, key=lambda p: int(p.rsplit("_", 1)[1][:-3])):
        t = onnx.TensorProto()
        with open(path, "rb") as f:
            t.ParseFromString(f.read())
        if not t.name:
            fail("%s: the tensor has no name" % path)
        feeds[t.name] = numpy_helper.to_array(t)
    if not feeds:
        fail("%s: no input_K.pb files" % in_dir)
    return feeds


def main(argv):
    if len(argv) != 6:
        fail("usage: ort_block.py MODEL.onnx INPUTS THREADS MIN_TIME_S "
             "MIN_ITERS")
    model, in_dir = argv[1], argv[2]
    threads, min_time, min_iters = int(argv[3]), float(argv[4]), int(argv[5])
    feeds = read_inputs(in_dir)
    base_kb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    opts = ort.SessionOptions()
    opts.intra_op_num_threads = threads
    opts.inter_op_num_threads = 1
    opts.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    try:
        sess = ort.InferenceSession(model, opts,
                                    providers=["CPUExecutionProvider"])
    except Exception as e:  # onnxruntime raises several types
        fail("%s: onnxruntime cannot load the model: %s" % (model, e))
    names = [o.name for o in sess.get_outputs()]
    run = sess.run
    clock = time.perf_counter_ns

    warm_ns = int(0.1 * min_time * 1e9)
    warmup = 0
    t0 = clock()
    while True:
        run(names, feeds)
        warmup += 1
        if clock() - t0 >= warm_ns:
            break

    min_ns = int(min_time * 1e9)
    samples = []
    t0 = clock()
    while True:
        a = clock()
        run(names, feeds)
        b = clock()
        samples.append(b - a)
        if len(samples) >= min_iters and b - t0 >= min_ns:
            break
    print(json.dumps({"samples_ns": samples, "warmup": warmup,
                      "version": ort.__version__,
                      "rss_before_session_kb": base_kb}))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
