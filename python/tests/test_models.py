"""Zoo models and ONNX node test cases through Python: the same outputs as
`wmap run`, onnxruntime's within the peer tolerance, and the test data's
expected outputs."""

import glob
import os
import subprocess

import numpy as np
import pytest

import wmap
from conftest import PEER_ATOL, PEER_RTOL, export, make_inputs, \
    node_data_dir

ZOO = ["mlp", "resnet18", "bert-base:layers=1,seq=16"]
THREADS = 2


def run_cli(cli, model, feeds, names, tmp, backends):
    """`wmap run MODEL --inputs DIR --save OUT`: its outputs by name."""
    ins = tmp / "in"
    out = tmp / "out"
    ins.mkdir()
    for k, (name, a) in enumerate(feeds.items()):
        wmap.save_tensor(a, ins / ("input_%d.pb" % k), name=name)
    r = subprocess.run([cli, "run", model, "--inputs", str(ins), "--save",
                        str(out), "--backends", backends, "--threads",
                        str(THREADS)], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    return [wmap.load_tensor(out / ("output_%d.pb" % k))
            for k in range(len(names))]


@pytest.mark.parametrize("spec", ZOO)
def test_zoo_model_agrees_with_wmap_run_and_onnxruntime(spec, cli, zoo_dir,
                                                       tmp_path):
    model = export(cli, zoo_dir, spec)
    sess = wmap.InferenceSession(model, backends=["cpu"], threads=THREADS)
    feeds = make_inputs(sess)
    names = [o.name for o in sess.get_outputs()]
    got = sess.run(None, feeds)
    assert len(got) == len(names)
    # The CLI on the same backend and threads: the very same numbers.
    cli_out = run_cli(cli, model, feeds, names, tmp_path, "cpu")
    for name, a, b in zip(names, got, cli_out):
        assert a.dtype == b.dtype and a.shape == b.shape, name
        np.testing.assert_array_equal(a, b, err_msg="%s %s" % (spec, name))
    ort = pytest.importorskip("onnxruntime")
    so = ort.SessionOptions()
    so.intra_op_num_threads = THREADS
    ref = ort.InferenceSession(model, so,
                               providers=["CPUExecutionProvider"])
    # onnxruntime describes the inputs the same way.
    assert [(i.name, i.type, i.shape) for i in ref.get_inputs()] == \
        [(i.name, i.type, i.shape) for i in sess.get_inputs()]
    want = ref.run(names, feeds)
    for name, a, w in zip(names, got, want):
        assert a.shape == w.shape, name
        err = np.abs(a.astype(np.float64) - w)
        tol = PEER_ATOL + PEER_RTOL * np.abs(w)
        print("%s %s: max abs diff vs onnxruntime %.3g, max rel %.3g"
              % (spec, name, err.max(),
                 (err / np.maximum(np.abs(w), 1e-30)).max()))
        bad = np.argmax(err - tol)
        assert (err <= tol).all(), (
            "%s output %s: element %d is %g, onnxruntime %g (|diff| %g > "
            "%g)" % (spec, name, bad, a.flat[bad], w.flat[bad],
                     err.flat[bad], tol.flat[bad]))


NODE_CASES = [
    "test_add", "test_relu", "test_matmul_2d", "test_conv_with_strides_padding",
    "test_softmax_axis_1", "test_gather_0", "test_transpose_default",
    "test_reduce_mean_default_axes_keepdims_example",
    "test_cast_FLOAT_to_STRING", "test_sequence_insert_at_back",
    "test_identity_sequence", "test_optional_get_element_sequence",
]


def kind_of(arg):
    """load_tensor's kind for a NodeArg."""
    if arg.type.startswith("seq("):
        return "sequence"
    if arg.type.startswith("optional("):
        return "optional"
    return "tensor"


def assert_matches(got, want, what):
    if isinstance(want, list):
        assert isinstance(got, list) and len(got) == len(want), what
        for k, (g, w) in enumerate(zip(got, want)):
            assert_matches(g, w, "%s[%d]" % (what, k))
        return
    assert got.dtype == want.dtype and got.shape == want.shape, \
        "%s: got %s%s, want %s%s" % (what, got.dtype, got.shape, want.dtype,
                                     want.shape)
    if got.dtype.kind == "f":
        np.testing.assert_allclose(got, want, rtol=1e-3, atol=1e-7,
                                   err_msg=what)
    else:
        assert got.tolist() == want.tolist(), what


@pytest.mark.parametrize("case", NODE_CASES)
@pytest.mark.parametrize("backend", ["ref", "cpu"])
def test_onnx_node_case_gives_its_expected_outputs(case, backend):
    d = os.path.join(node_data_dir(), case)
    if not os.path.isdir(d):
        pytest.skip("no %s in the test data" % case)
    sess = wmap.InferenceSession(os.path.join(d, "model.onnx"),
                                 backends=[backend])
    outputs = [o.name for o in sess.get_outputs()]
    sets = sorted(glob.glob(os.path.join(d, "test_data_set_*")))
    assert sets
    for ds in sets:
        files = sorted(glob.glob(os.path.join(ds, "input_*.pb")),
                       key=lambda p: int(p.rsplit("_", 1)[1][:-3]))
        feeds = {a.name: wmap.load_tensor(f, kind_of(a))
                 for a, f in zip(sess.get_inputs(), files)}
        got = sess.run(None, feeds)
        for k, name in enumerate(outputs):
            want = wmap.load_tensor(os.path.join(ds, "output_%d.pb" % k),
                                    kind_of(sess.get_outputs()[k]))
            assert_matches(got[k], want, "%s %s" % (case, name))


def test_a_wrong_value_in_a_node_case_is_caught():
    # The comparison above can fail: a perturbed output does not match.
    d = os.path.join(node_data_dir(), "test_add")
    want = wmap.load_tensor(os.path.join(d, "test_data_set_0", "output_0.pb"))
    with pytest.raises(AssertionError):
        assert_matches(want + 1e-2, want, "perturbed")
