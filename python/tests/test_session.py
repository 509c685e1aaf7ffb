"""InferenceSession: metadata, runs, zero-copy, placement and every bad
input raising the right wmap.Error."""

import gc
import os

import numpy as np
import pytest

import wmap
from conftest import make_inputs, source_file


@pytest.fixture(scope="module")
def mlp_bytes():
    return wmap.zoo("mlp:hidden=32,in=16,out=4")


@pytest.fixture(scope="module")
def mlp(mlp_bytes):
    return wmap.InferenceSession(mlp_bytes, threads=1)


def test_inputs_and_outputs_are_described_as_onnxruntime_does(mlp):
    (i,) = mlp.get_inputs()
    assert (i.name, i.type, i.shape) == ("input", "tensor(float)", [1, 16])
    (o,) = mlp.get_outputs()
    assert (o.name, o.type, o.shape) == ("logits", "tensor(float)", [1, 4])
    assert mlp.get_providers() == ["cpu"]


def test_symbolic_dims_are_named_and_unknown_ones_none():
    sess = wmap.InferenceSession(source_file("tests", "e2e", "dynamic.onnx"))
    (x,) = sess.get_inputs()
    assert x.type == "tensor(float)"
    assert x.shape[0] == "batch" and x.shape[1] == 3
    assert x.shape[2] is None
    assert all(isinstance(d, (int, str)) or d is None for d in x.shape)
    # The same session runs two shapes (one plan each).
    for n, h in ((1, 8), (2, 6)):
        a = np.random.default_rng(n).standard_normal(
            (n, 3, h, 8)).astype(np.float32)
        (y,) = sess.run(None, {"x": a})
        assert y.shape[0] == n and y.shape[1] == 3


def test_initializers_listed_as_inputs_are_not_inputs():
    node = source_file("tests", "e2e", "dynamic.onnx")  # source tree check
    del node
    import glob
    import os
    from conftest import node_data_dir
    root = os.path.dirname(node_data_dir())
    # pytorch-converted models list their weights among the graph inputs.
    models = sorted(glob.glob(os.path.join(
        root, "pytorch-converted", "test_Linear*", "model.onnx")))
    if not models:
        pytest.skip("no pytorch-converted Linear case")
    sess = wmap.InferenceSession(models[0], backends=["ref"])
    inits = sess.get_overridable_initializers()
    assert inits, "the case lists no initializer among its inputs"
    names = {a.name for a in sess.get_inputs()}
    assert names and not names & {a.name for a in inits}


def test_run_matches_a_second_run_and_numpy_reference(mlp):
    x = np.random.default_rng(1).standard_normal((1, 16)).astype(np.float32)
    (a,) = mlp.run(None, {"input": x})
    (b,) = mlp.run(["logits"], {"input": x})
    assert a.dtype == np.float32 and a.shape == (1, 4)
    np.testing.assert_array_equal(a, b)
    assert not np.shares_memory(a, b)


def test_outputs_view_the_library_tensor_and_outlive_the_session(mlp_bytes):
    sess = wmap.InferenceSession(mlp_bytes)
    x = np.ones((1, 16), np.float32)
    (y,) = sess.run(None, {"input": x})
    expect = y.copy()
    assert type(y.base).__name__ == "_Owned"  # a view, not a copy
    assert y.flags.writeable and y.flags.c_contiguous
    sess.close()
    del sess
    gc.collect()
    np.testing.assert_array_equal(y, expect)
    view = y[:, 1:]
    del y
    gc.collect()
    np.testing.assert_array_equal(view, expect[:, 1:])


def test_non_contiguous_and_byte_swapped_inputs_are_copied(mlp):
    x = np.random.default_rng(2).standard_normal((1, 16)).astype(np.float32)
    (want,) = mlp.run(None, {"input": x})
    wide = np.zeros((1, 32), np.float32)
    wide[:, ::2] = x
    (strided,) = mlp.run(None, {"input": wide[:, ::2]})
    (swapped,) = mlp.run(None, {"input": x.astype(">f4")})
    (listed,) = mlp.run(None, {"input": x.tolist()})
    np.testing.assert_array_equal(strided, want)
    np.testing.assert_array_equal(swapped, want)
    np.testing.assert_array_equal(listed, want)


def test_threads_and_strict_placement(mlp_bytes):
    x = np.ones((1, 16), np.float32)
    one = wmap.InferenceSession(mlp_bytes, threads=1).run(None, {"input": x})
    two = wmap.InferenceSession(mlp_bytes, threads=2, strict=True).run(
        None, {"input": x})
    ref = wmap.InferenceSession(mlp_bytes, backends="ref").run(
        None, {"input": x})
    np.testing.assert_allclose(one[0], two[0], rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(one[0], ref[0], rtol=1e-4, atol=1e-5)


def test_placement_names_the_backend_of_every_node(mlp_bytes):
    sess = wmap.InferenceSession(mlp_bytes, backends=["cpu"])
    sess.run(None, {"input": np.ones((1, 16), np.float32)})
    report = sess.placement_report()
    assert report["schema"] == "wmap.placement/1"
    nodes = sess.placement()
    assert nodes and nodes == report["nodes"]
    for n in nodes:
        assert {"name", "op", "backend", "impl", "level", "refusals"} <= set(n)
    assert {n["backend"] for n in nodes if n["pass"] is None} <= {"cpu", "ref"}
    gemms = [n for n in nodes if n["op"] == "Gemm"]
    assert gemms and all(n["backend"] == "cpu" or n["runs_in"]
                         for n in gemms)
    none = wmap.InferenceSession(mlp_bytes, backends=["ref"], passes="")
    assert {n["backend"] for n in none.placement()} == {"ref"}


def test_load_and_save_tensor_round_trip(tmp_path):
    for a in (np.arange(6, dtype=np.int64).reshape(2, 3),
              np.array([[True, False]]), np.float16([1.5, -2]),
              np.array(["a", "bc"], dtype=object)):
        path = tmp_path / "t.pb"
        wmap.save_tensor(a, path, name="t")
        b = wmap.load_tensor(path)
        assert b.dtype == a.dtype and b.shape == a.shape
        assert b.tolist() == a.tolist()


# ---------------------------------------------------------------- errors

def raises(cls, fn, *needles):
    with pytest.raises(cls) as info:
        fn()
    assert type(info.value) is cls, type(info.value)
    for n in needles:
        assert n in str(info.value), str(info.value)
    return info.value


def test_wrong_dtype_names_the_input_and_both_types(mlp):
    x = np.ones((1, 16), np.float64)
    raises(wmap.InvalidArgument, lambda: mlp.run(None, {"input": x}),
           'input "input"', "tensor(float)", "float64")
    raises(wmap.InvalidArgument,
           lambda: mlp.run(None, {"input": np.ones((1, 16), np.int32)}),
           "int32")


def test_wrong_rank_and_dims_name_the_input_and_shapes(mlp):
    raises(wmap.InvalidArgument,
           lambda: mlp.run(None, {"input": np.ones(16, np.float32)}),
           'input "input"', "rank 2", "[1,16]", "(16,)")
    raises(wmap.InvalidArgument,
           lambda: mlp.run(None, {"input": np.ones((1, 15), np.float32)}),
           "dim 1 is 15, want 16")


def test_missing_unknown_inputs_and_outputs_are_named(mlp):
    x = np.ones((1, 16), np.float32)
    raises(wmap.InvalidArgument, lambda: mlp.run(None, {}),
           'no value for input "input"')
    raises(wmap.InvalidArgument,
           lambda: mlp.run(None, {"input": x, "extra": x}),
           '"extra" is not an input', "its inputs are input")
    raises(wmap.InvalidArgument, lambda: mlp.run(["nope"], {"input": x}),
           '"nope" is not an output', "logits")
    raises(wmap.InvalidArgument, lambda: mlp.run(None, [x]), "dict")
    raises(wmap.InvalidArgument,
           lambda: mlp.run(None, {"input": "text"}), 'input "input"')


def test_bad_models_raise_their_status_class(tmp_path):
    raises(wmap.NotFound,
           lambda: wmap.InferenceSession(str(tmp_path / "none.onnx")),
           "none.onnx")
    raises(wmap.DataLoss, lambda: wmap.InferenceSession(b"\x08\x07garbage"))
    bad = tmp_path / "bad.onnx"
    bad.write_bytes(b"\xff\xff\xff")
    raises(wmap.DataLoss, lambda: wmap.InferenceSession(str(bad)), "bad.onnx")
    raises(wmap.InvalidArgument, lambda: wmap.InferenceSession(42), "int")


def test_bad_options_raise_invalid_argument_or_not_found(mlp_bytes):
    raises(wmap.NotFound,
           lambda: wmap.InferenceSession(mlp_bytes, backends=["nope"]),
           'no backend named "nope"')
    raises(wmap.InvalidArgument,
           lambda: wmap.InferenceSession(mlp_bytes, backends=["cpu", "cpu"]),
           "twice")
    raises(wmap.InvalidArgument,
           lambda: wmap.InferenceSession(mlp_bytes, threads=-1), "threads")
    raises(wmap.InvalidArgument,
           lambda: wmap.InferenceSession(mlp_bytes, passes="nosuch"),
           "nosuch")
    raises(wmap.InvalidArgument,
           lambda: wmap.InferenceSession(mlp_bytes, kernels="fast"), "fast")
    raises(wmap.InvalidArgument,
           lambda: wmap.InferenceSession(mlp_bytes, dims={"nosuch": 2}),
           "nosuch")
    raises(wmap.InvalidArgument, lambda: wmap.zoo("resnet18:batch=0"),
           "batch")
    raises(wmap.InvalidArgument, lambda: wmap.zoo("nosuchmodel"),
           "nosuchmodel")


def test_a_closed_session_refuses_to_run(mlp_bytes):
    sess = wmap.InferenceSession(mlp_bytes)
    sess.close()
    raises(wmap.InvalidArgument,
           lambda: sess.run(None, {"input": np.ones((1, 16), np.float32)}),
           "closed")


def test_untrusted_control_flow_stops_at_the_limits():
    # Neither model has inputs: a Loop whose condition stays true, and a
    # sequence that grows by one element an iteration.
    loop = wmap.InferenceSession(source_file("tests/e2e/endless_loop.onnx"),
                                 max_iterations=10)
    raises(wmap.ResourceExhausted, lambda: loop.run(None, {}),
           'node "spin" (Loop)', "reached the limit of 10 iterations")
    seq = wmap.InferenceSession(
        source_file("tests/e2e/growing_sequence.onnx"), max_sequence_length=7)
    raises(wmap.ResourceExhausted, lambda: seq.run(None, {}),
           "a sequence of 8 elements is past the limit of 7")
    for bad in (0, -1, 2.5, True):
        raises(wmap.InvalidArgument,
               lambda: wmap.InferenceSession(
                   source_file("tests/e2e/endless_loop.onnx"),
                   max_iterations=bad), "max_iterations")


def test_a_crashing_plugin_is_refused_with_a_warning_and_runs_go_on(
        mlp_bytes, tmp_path, monkeypatch):
    build = os.environ.get("WMAP_BUILD_DIR")
    plugin = os.path.join(build or "", "tests", "plugins", "hostile",
                          "libwmap_backend_segv_query.so")
    if not build or not os.path.exists(plugin):
        pytest.skip("no hostile test plugin in WMAP_BUILD_DIR")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))  # probed afresh
    with pytest.warns(RuntimeWarning, match="killed by signal 11"):
        sess = wmap.InferenceSession(mlp_bytes, backend_paths=[plugin])
    out = sess.run(None, make_inputs(sess))
    assert out and np.all(np.isfinite(out[0]))
