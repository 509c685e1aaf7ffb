"""Shared fixtures: the source tree, the wmap CLI, zoo exports and the
ONNX test data. Environment (set by the ctest python.pytest):
WMAP_SOURCE_DIR (the repository), WMAP_BUILD_DIR (the build whose libwmap
the package bundles), WMAP_TEST_EXPECT_BUNDLED=1 (the installed package
must use its bundled library)."""

import os
import subprocess

import numpy as np
import pytest

import wmap

HERE = os.path.dirname(os.path.abspath(__file__))
SOURCE_DIR = os.environ.get("WMAP_SOURCE_DIR") or \
    os.path.normpath(os.path.join(HERE, os.pardir, os.pardir))
SEED = 20261202
# The peer tolerance of tests/peer/zoo_vs_ort.sh: |wmap - ort| <= ATOL +
# RTOL * |ort| (the conformance rtol; atol for deep fp32 sums).
PEER_RTOL = 1e-3
PEER_ATOL = 1e-4


def source_file(*parts):
    path = os.path.join(SOURCE_DIR, *parts)
    if not os.path.exists(path):
        pytest.skip("%s is not here (no source tree)" % path)
    return path


@pytest.fixture(scope="session")
def cli():
    try:
        return wmap.cli_path()
    except wmap.NotFound as e:
        pytest.skip(str(e))


@pytest.fixture(scope="session")
def zoo_dir(tmp_path_factory, cli):
    """A folder of zoo exports written by `wmap zoo export`."""
    d = tmp_path_factory.mktemp("zoo")
    return d


def export(cli, zoo_dir, spec):
    name = spec.replace(":", "_").replace("=", "_").replace(",", "_")
    path = zoo_dir / (name + ".onnx")
    if not path.exists():
        subprocess.run([cli, "zoo", "export", spec, str(path)], check=True,
                       capture_output=True)
    return str(path)


def make_inputs(sess):
    """Seeded inputs for a zoo model: floats from a normal distribution,
    token ids in [0, 1000) (inside every zoo vocabulary), attention masks
    of ones, token types 0 then 1 (as tests/peer/zoo_vs_ort.py)."""
    rng = np.random.default_rng(SEED)
    feeds = {}
    for arg in sess.get_inputs():
        shape = [d if isinstance(d, int) else 1 for d in arg.shape]
        name = arg.name.lower()
        if arg.type == "tensor(float)":
            feeds[arg.name] = rng.standard_normal(shape).astype(np.float32)
        elif "mask" in name:
            feeds[arg.name] = np.ones(shape, np.int64)
        elif "type" in name:
            a = np.zeros(shape, np.int64)
            a[..., shape[-1] // 2:] = 1
            feeds[arg.name] = a
        else:
            feeds[arg.name] = rng.integers(0, 1000, size=shape,
                                           dtype=np.int64)
    return feeds


def node_data_dir():
    root = os.environ.get("WMAP_ONNX_TESTDATA",
                          "/usr/share/libonnx-testdata/data")
    node = os.path.join(root, "node")
    if not os.path.isdir(node):
        pytest.skip("no ONNX test data in %s (apt-get install "
                    "libonnx-testdata)" % root)
    return node
