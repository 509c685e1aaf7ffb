"""map, bench, compare, conform and the zoo from Python: dicts with the
documented schema keys, and bad arguments raising wmap.Error classes."""

import copy
import json

import numpy as np
import pytest

import wmap
from conftest import node_data_dir, source_file

MLP = "mlp:hidden=32,in=16,out=4"


@pytest.fixture(scope="module")
def peaks():
    return source_file("tests", "e2e", "map_peaks.json")


def test_zoo_lists_models_with_their_keys():
    models = {m["name"]: m for m in wmap.zoo_models()}
    assert {"mlp", "resnet18", "bert-base"} <= set(models)
    batch = models["resnet18"]["keys"]["batch"]
    assert batch["default"] == 1 and batch["min"] == 1
    sess = wmap.InferenceSession(wmap.zoo("resnet18:batch=2"),
                                 backends=["ref"], passes="")
    assert sess.get_inputs()[0].shape == [2, 3, 224, 224]


def test_map_returns_the_documented_members(peaks):
    m = wmap.map(wmap.zoo(MLP), backends=["cpu"], peaks=peaks)
    assert m["format"] == "wmap.map/1"
    for key in ("model", "graph", "opset", "dims", "machine", "totals",
                "memory", "notes", "backends", "critical_path", "parallel",
                "op_types", "nodes"):
        assert key in m, key
    assert [b["name"] for b in m["backends"]] == ["cpu"]
    # mlp 16 -> 32 -> 32 -> 4: Gemms of 16x32, 32x32 and 32x4 MACs.
    assert m["totals"]["macs"] == 16 * 32 + 32 * 32 + 32 * 4
    assert m["totals"]["params"] == 16 * 32 + 32 + 32 * 32 + 32 + 32 * 4 + 4
    assert m["machine"] is not None
    assert m["parallel"] is None
    assert {n["op_type"] for n in m["nodes"]} >= {"Gemm"}


def test_map_binds_dims_and_plans_parallel(peaks):
    model = source_file("tests", "e2e", "dynamic.onnx")
    with pytest.warns(RuntimeWarning, match="dims nothing binds are 1"):
        m = wmap.map(model, backends=["ref"], dims={"batch": 4}, peaks=peaks)
    assert m["dims"]["batch"] == 4
    p = wmap.map(wmap.zoo("bert-base:layers=1,seq=16"), peaks=False,
                 parallel="tp=2,inference=1", backends="cpu")
    assert p["parallel"] is not None and p["parallel"]["collectives"]


def test_map_bad_arguments_raise(peaks):
    b = wmap.zoo(MLP)
    with pytest.raises(wmap.InvalidArgument, match="dp=x"):
        wmap.map(b, peaks=False, parallel="dp=x")
    with pytest.raises(wmap.InvalidArgument, match="critical \"gpu\""):
        wmap.map(b, peaks=False, backends=["cpu"], critical="gpu")
    with pytest.raises(wmap.NotFound):
        wmap.map(b, peaks="/no/such/peaks.json")
    with pytest.raises(wmap.InvalidArgument, match="no input named"):
        wmap.map(b, peaks=False, shapes={"nosuch": [1, 2]})
    with pytest.raises(wmap.NotFound, match="nope"):
        wmap.map(b, peaks=False, backends=["nope"])


@pytest.fixture(scope="module")
def baseline(cli):
    return wmap.bench(wmap.zoo(MLP), backends=["cpu"], threads=1, blocks=2,
                      min_time=0.05, min_iters=5, profile=False)


def test_bench_returns_a_baseline(baseline):
    assert baseline["format"] == "wmap.baseline/1"
    for key in ("created_utc", "tool", "model", "method", "environment",
                "configurations"):
        assert key in baseline, key
    (conf,) = baseline["configurations"]
    assert conf["backends"] == ["cpu"] and conf["threads"] == 1
    lat = conf["results"]["latency"]
    assert lat["n"] >= 10 and 0 < lat["min_ns"] <= lat["p50_ns"]
    assert baseline["method"]["blocks"] == 2


def test_bench_bad_arguments_raise(cli, tmp_path):
    with pytest.raises(wmap.InvalidArgument, match="blocks"):
        wmap.bench(wmap.zoo(MLP), blocks=0)
    with pytest.raises(wmap.NotFound):
        wmap.bench(str(tmp_path / "none.onnx"))
    with pytest.raises(wmap.NotFound, match="nope"):
        wmap.bench(wmap.zoo(MLP), backends=["nope"], blocks=1,
                   min_time=0.01)


def test_compare_takes_paths_and_dicts(baseline, tmp_path):
    path = tmp_path / "base.json"
    path.write_text(json.dumps(baseline))
    c = wmap.compare(str(path), baseline)
    assert c["format"] == "wmap.compare/1"
    for key in ("base", "new", "env_diff", "method", "metrics", "overall"):
        assert key in c, key
    assert c["metrics"]
    for metric in c["metrics"]:
        assert metric["ratio"] == pytest.approx(1.0)
        assert metric["verdict"] in ("no_change", "insufficient_data",
                                     "inconclusive", "within_noise")
    # Twice as slow on every sample: the ratio says so.
    slow = copy.deepcopy(baseline)
    for conf in slow["configurations"]:
        res = conf["results"]
        res["samples_ns"] = [[2 * s for s in block]
                             for block in res["samples_ns"]]
        for block in res["blocks"]:
            for k in block:
                if k.endswith("_ns"):
                    block[k] *= 2
    slow["results"] = slow["configurations"][0]["results"]
    c2 = wmap.compare(baseline, slow)
    assert c2["metrics"][0]["ratio"] == pytest.approx(2.0, rel=1e-3)


def test_compare_bad_baselines_raise(tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text("{\"format\": \"something else\"}")
    with pytest.raises(wmap.DataLoss):
        wmap.compare(str(bad), str(bad))
    with pytest.raises(wmap.DataLoss):
        wmap.compare({"format": "wmap.baseline/1"}, str(bad))
    with pytest.raises(wmap.InvalidArgument, match="noise"):
        wmap.compare(str(bad), str(bad), noise=2)
    with pytest.raises(wmap.InvalidArgument):
        wmap.compare(3, str(bad))


def test_conform_returns_its_records(cli):
    node_data_dir()
    r = wmap.conform(backend="cpu", suites=["node"],
                     filter="^test_(add|relu)$")
    assert r["schema"] == "wmap.conform/1" and r["backend"] == "cpu"
    assert set(r["summary"]) >= {"passed", "failed", "unsupported"}
    names = {c["name"]: c for c in r["cases"]}
    assert set(names) == {"test_add", "test_relu"}
    for c in names.values():
        assert c["status"] == "pass", c
        assert {"suite", "reason", "ops", "nodes", "nodes_on_backend",
                "max_abs_err", "time_us"} <= set(c)
    assert r["summary"]["passed"] == 2


def test_conform_bad_arguments_raise(cli):
    with pytest.raises(wmap.InvalidArgument, match="suite"):
        wmap.conform(suites=["nosuchsuite"])
    with pytest.raises(wmap.InvalidArgument):
        wmap.conform(backend="")
