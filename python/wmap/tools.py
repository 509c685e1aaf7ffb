"""The workload map, benchmarks, comparisons, conformance and the zoo.

In-process through libwmap where it has the API: map (wm_map_build,
wm_map_to_json), compare (wm_baseline_load, wm_compare_baselines,
wm_compare_to_json) and the zoo (wm_zoo_build). bench and conform run the
wmap CLI and parse its JSON: bench measures each block in a fresh child
process, and conform's case runner lives only in the CLI
(tools/wmap/conform.c). The CLI is the one bundled in the package
(wmap/_lib/wmap-cli), else `wmap` on PATH.
"""

import ctypes
import json
import os
import re
import shutil
import subprocess
import tempfile
import warnings

from . import _capi, _core
from ._capi import lib
from .errors import CommandFailed, InvalidArgument, NotFound, check

_DIM_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_.\-]*$")


# ------------------------------------------------------------------- zoo

def zoo_models():
    """The zoo's models: [{name, description, keys: {key: {default, min,
    max, doc}}}]."""
    out = []
    for i in range(lib.wm_zoo_count()):
        m = lib.wm_zoo_at(i).contents
        keys = {}
        for k in range(m.key_count):
            key = m.keys[k]
            keys[_core.text(key.name)] = {
                "default": key.default, "min": key.min, "max": key.max,
                "doc": _core.text(key.doc)}
        out.append({"name": _core.text(m.name),
                    "description": _core.text(m.description), "keys": keys})
    return out


def zoo(spec):
    """The ONNX bytes of zoo model |spec| ("resnet18",
    "bert-base:layers=1,seq=16"), as `wmap zoo export` writes them."""
    if not isinstance(spec, str):
        raise InvalidArgument("zoo wants a spec string such as "
                              "\"resnet18:batch=1\", got %r" % (spec,))
    graph = ctypes.c_void_p()
    check(lib.wm_zoo_build(spec.encode(), ctypes.byref(graph)))
    try:
        data = ctypes.c_void_p()
        size = ctypes.c_size_t()
        check(lib.wm_onnx_save_buffer(graph, ctypes.byref(data),
                                      ctypes.byref(size)),
              "serializing \"%s\"" % spec)
        try:
            return ctypes.string_at(data, size.value)
        finally:
            _capi.libc.free(data)
    finally:
        lib.wm_graph_destroy(graph)


def zoo_export(spec, path):
    """Writes zoo model |spec| to |path| as ONNX."""
    graph = ctypes.c_void_p()
    check(lib.wm_zoo_build(str(spec).encode(), ctypes.byref(graph)))
    try:
        check(lib.wm_onnx_save(graph, os.fsencode(os.fspath(path))))
    finally:
        lib.wm_graph_destroy(graph)


# ------------------------------------------------------------------- map

def _apply_shapes(graph, dims, shapes):
    """Like the CLI's --dim/--shape: |shapes| ({input: dims}) sets whole
    inputs (named dims become bindings), and every dim still unbound is 1
    (one warning lists them). Returns the {name: value} bindings."""
    dims = dict(dims or {})
    if not isinstance(dims, dict):
        raise InvalidArgument("dims wants a dict {name: value}")
    for name, value in dims.items():
        if not isinstance(name, str) or isinstance(value, bool) or \
                not isinstance(value, int) or value < 1:
            raise InvalidArgument("dims: %r=%r wants a name and a whole "
                                  "number >= 1" % (name, value))
    inputs = {n: (t, init) for n, t, init in graph.inputs()}
    if shapes is not None and not isinstance(shapes, dict):
        raise InvalidArgument("shapes wants a dict {input: dims}")
    for name, to in (shapes or {}).items():
        if name not in inputs or inputs[name][1]:
            raise InvalidArgument("shapes: the model has no input named "
                                  "\"%s\"" % name)
        t, _ = inputs[name]
        to = list(to)
        if t.kind != _capi.TYPE_TENSOR or t.rank != len(to):
            raise InvalidArgument("shapes: %s=%s: the input has rank %d"
                                  % (name, to, t.rank))
        for i, v in enumerate(to):
            if not isinstance(v, int) or v < 1:
                raise InvalidArgument("shapes: %s dim %d wants a whole "
                                      "number >= 1, got %r" % (name, i, v))
            if t.dims[i] >= 0 and t.dims[i] != v:
                raise InvalidArgument("shapes: %s=%s: dim %d of the input "
                                      "is %d" % (name, to, i, t.dims[i]))
            p = t.dim_params[i]
            if t.dims[i] < 0 and p and _DIM_NAME.match(p):
                if dims.get(p, v) != v:
                    raise InvalidArgument(
                        "shapes: %s gives dim \"%s\" %d, dims gives %d"
                        % (name, p, v, dims[p]))
                dims[p] = v
            elif t.dims[i] < 0:
                t.dims[i] = v
                t.dim_params[i] = None
        _set_type(graph, name, t)
    noted = []
    for name, (t, init) in inputs.items():
        if init or t.kind != _capi.TYPE_TENSOR:
            continue
        changed = False
        for i in range(max(t.rank, 0)):
            if t.dims[i] >= 0:
                continue
            p = t.dim_params[i]
            if p and _DIM_NAME.match(p):
                if p not in dims:
                    dims[p] = 1
                    noted.append(p)
            else:
                t.dims[i] = 1
                t.dim_params[i] = None
                changed = True
                noted.append("input \"%s\" dim %d" % (name, i))
        if changed:
            _set_type(graph, name, t)
    if noted:
        warnings.warn("wmap: dims nothing binds are 1: " + ", ".join(noted),
                      RuntimeWarning, stacklevel=3)
    return dims


def _set_type(graph, name, info):
    t = _capi.Type()
    t.kind = info.kind
    t.elem_kind = info.elem_kind
    t.dtype = info.dtype
    t.shape.rank = info.rank
    keep = []
    for i in range(max(info.rank, 0)):
        t.shape.dims[i] = info.dims[i]
        if info.dim_params[i]:
            b = info.dim_params[i].encode()
            keep.append(b)
            t.dim_params[i] = b
    vid = lib.wm_graph_find_value(graph.ptr, name.encode())
    check(lib.wm_graph_set_type(graph.ptr, vid, ctypes.byref(t)),
          "setting the shape of input \"%s\"" % name)


def _peaks(peaks, threads, backend_paths):
    """The wm_peaks_t the map uses, or None (declared peaks only)."""
    if peaks is False:
        return None
    p = _capi.Peaks()
    if isinstance(peaks, (str, os.PathLike)):
        check(lib.wm_peaks_load(os.fsencode(os.fspath(peaks)),
                                ctypes.byref(p)))
        return p
    if peaks is not None:
        raise InvalidArgument("peaks wants None (the probe cache, measured "
                              "on first use), a wmap.peaks/1 file or False "
                              "(declared peaks only), got %r" % (peaks,))
    # As `wmap map`: all cores and 1 thread, whatever the session's
    # threads, since the cache holds both.
    del threads
    reg = _core.Registry(0, backend_paths)
    one = []

    def open_one(ctx, out):
        try:
            r = _core.Registry(1, backend_paths)
        except Exception:  # a status cannot cross back; say why on stderr
            out[0] = None
            return None
        one.append(r)
        out[0] = r.ptr.value
        r.ptr = ctypes.c_void_p()  # wm_peaks_get destroys it
        return None

    cb = _capi.OPEN_ONE_FN(open_one)
    opts = _capi.PeaksOptions()
    opts.registry = reg.ptr
    opts.open_one = cb
    try:
        check(lib.wm_peaks_get(ctypes.byref(opts), ctypes.byref(p)),
              "getting this machine's peaks")
    finally:
        reg.close()
    return p


def map(model, backends=None, dims=None, shapes=None, parallel=None,
        critical=None, peaks=None, threads=None, backend_paths=None):
    """The workload map of |model| (a path or ONNX bytes) as a dict
    (schema "wmap.map/1", docs/map-format.md): per node and op type its
    work and traffic, memory, roofline per backend, coverage, critical
    path and, with |parallel| ("dp=2,tp=4"), the collectives of the plan.

    backends: names to map onto (default: every loaded backend, ref last,
        as `wmap map`); ref is the fallback.
    dims: {name: value} for symbolic dims; shapes: {input: [dims]}; every
        dim still unbound is 1 (with a warning).
    critical: the backend whose roofline times weigh the critical path.
    peaks: None = this machine's peaks from the probe cache (measured on
        first use, ~15 s), a wmap.peaks/1 file, or False (declared only).
    threads: the host thread count the roofs are taken at (0 = all cores).
    """
    names = _core.check_names(backends, "backends")
    threads = _core.check_threads(threads)
    if parallel is not None and not isinstance(parallel, str):
        raise InvalidArgument("parallel wants a spec such as \"dp=2,tp=4\", "
                              "got %r" % (parallel,))
    graph = _core.Graph(model)
    try:
        bound = _apply_shapes(graph, dims, shapes)
        p = _peaks(peaks, threads, backend_paths)
        reg = _core.Registry(threads, backend_paths)
        try:
            if names is None:
                all_names = reg.names()
                names = [n for n in all_names if n != "ref"][:7] + \
                    (["ref"] if "ref" in all_names else [])
            names, arr = reg.backend_list(names)
            dim_arr = (_capi.MapDim * (len(bound) + 1))()
            keep = []
            for i, (k, v) in enumerate(bound.items()):
                keep.append(k.encode())
                dim_arr[i].name = keep[-1]
                dim_arr[i].value = v
            opts = _capi.MapOptions()
            label = graph.label.encode()
            opts.model = label
            opts.backends = ctypes.cast(arr, ctypes.POINTER(ctypes.c_void_p))
            opts.backend_count = len(names)
            opts.fallback = reg.find("ref")
            opts.peaks = ctypes.pointer(p) if p is not None else None
            opts.dims = ctypes.cast(dim_arr, ctypes.POINTER(_capi.MapDim))
            opts.n_dims = len(bound)
            par = _capi.MapParallel()
            if parallel is not None:
                check(lib.wm_map_parse_parallel(parallel.encode(),
                                                ctypes.byref(par)),
                      "parallel \"%s\"" % parallel)
                opts.parallel = ctypes.pointer(par)
            if critical is not None:
                if critical not in names:
                    raise InvalidArgument(
                        "critical \"%s\": not among the mapped backends %s"
                        % (critical, ", ".join(names)))
                opts.critical_backend = names.index(critical)
            opts.threads = threads
            m = ctypes.c_void_p()
            check(lib.wm_map_build(graph.ptr, ctypes.byref(opts),
                                   ctypes.byref(m)),
                  "mapping \"%s\"" % graph.label)
            try:
                return json.loads(_capi.strbuf_text(lib.wm_map_to_json, m))
            finally:
                lib.wm_map_destroy(m)
        finally:
            reg.close()
    finally:
        graph.close()


# --------------------------------------------------------------- compare

def _baseline(b, tmp, what):
    """A loaded wm_baseline_t from a path or a dict (written to |tmp|)."""
    if isinstance(b, dict):
        path = os.path.join(tmp, what + ".json")
        with open(path, "w") as f:
            json.dump(b, f)
        label = "<%s dict>" % what
    elif isinstance(b, (str, os.PathLike)):
        path = os.fspath(b)
        label = path
    else:
        raise InvalidArgument("compare: %s wants a wmap.baseline/1 path or "
                              "dict, got %s" % (what, type(b).__name__))
    ptr = ctypes.c_void_p()
    check(lib.wm_baseline_load(os.fsencode(path), ctypes.byref(ptr)),
          "compare: %s" % what if isinstance(b, dict) else None)
    return ptr, label


def compare(base, new, noise=0.05, alpha=0.05, resamples=10000, seed=1,
            force=False):
    """Compares two benchmark baselines (paths or dicts of
    "wmap.baseline/1") as `wmap compare` does; returns its JSON as a dict
    (per metric the ratio of medians, its bootstrap interval, the
    Mann-Whitney p-value and a verdict; the environment differences; the
    overall verdict)."""
    for name, v in (("noise", noise), ("alpha", alpha)):
        if not isinstance(v, (int, float)) or not 0 < v < 1:
            raise InvalidArgument("compare: %s wants a number in (0, 1), "
                                  "got %r" % (name, v))
    if not isinstance(resamples, int) or resamples < 1:
        raise InvalidArgument("compare: resamples wants a count >= 1, got %r"
                              % (resamples,))
    with tempfile.TemporaryDirectory(prefix="wmap-compare-") as tmp:
        a, a_label = _baseline(base, tmp, "base")
        try:
            b, b_label = _baseline(new, tmp, "new")
        except Exception:
            lib.wm_baseline_destroy(a)
            raise
        try:
            opts = _capi.CompareOptions(noise, alpha, resamples, seed,
                                        bool(force))
            c = ctypes.c_void_p()
            check(lib.wm_compare_baselines(a, b, a_label.encode(),
                                           b_label.encode(), ctypes.byref(opts),
                                           ctypes.byref(c)))
            try:
                return json.loads(_capi.strbuf_text(lib.wm_compare_to_json, c))
            finally:
                lib.wm_compare_destroy(c)
        finally:
            lib.wm_baseline_destroy(a)
            lib.wm_baseline_destroy(b)


# ------------------------------------------------------------------- CLI

def cli_path():
    """The wmap CLI: the bundled one (wmap/_lib/wmap-cli), else `wmap` on
    PATH; NotFound when neither is there."""
    bundled = _capi.BUNDLED_CLI
    if os.path.isfile(bundled) and os.access(bundled, os.X_OK):
        return bundled
    found = shutil.which("wmap")
    if found:
        return found
    raise NotFound("the wmap CLI is neither bundled (%s) nor on PATH "
                   "(bench and conform run it)" % bundled)


def _cli_args(backend_paths, threads):
    args = []
    for p in _core.check_names(backend_paths, "backend_paths") or []:
        args += ["--backend-path", p]
    if threads is not None:
        args += ["--threads", str(_core.check_threads(threads))]
    return args


def _run_cli(args, timeout=None):
    cmd = [cli_path()] + args
    try:
        r = subprocess.run(cmd, capture_output=True, text=True,
                           timeout=timeout)
    except subprocess.TimeoutExpired as e:
        raise CommandFailed("%s: still running after %s s" % (
            " ".join(cmd), timeout), -1, "", cmd) from e
    return r, cmd


def _fail(r, cmd):
    err = (r.stderr or "").strip()
    msg = "%s exited %d: %s" % (" ".join(cmd[:2]), r.returncode,
                               err or "(no message)")
    if r.returncode == 2:
        raise InvalidArgument(msg)
    raise CommandFailed(msg, r.returncode, r.stderr, cmd)


def _model_file(model, tmp):
    """A path for the CLI: |model| itself, or its bytes written to |tmp|.
    The model is loaded first so a bad one raises its own error here."""
    _core.Graph(model).close()
    if isinstance(model, (bytes, bytearray, memoryview)):
        path = os.path.join(tmp, "model.onnx")
        with open(path, "wb") as f:
            f.write(bytes(model))
        return path
    return os.fspath(model)


def bench(model, backends=None, threads=None, blocks=None, min_time=None,
          min_iters=None, profile=True, dims=None, inputs=None,
          backend_paths=None, timeout=None):
    """Benchmarks |model| (a path or ONNX bytes) with `wmap bench ...
    --format json` and returns its baseline as a dict ("wmap.baseline/1",
    docs/baseline-format.md): per configuration the latency distribution
    of interleaved blocks, each run in a fresh process.

    backends: a list of configurations, each a name list or "cpu,ref"
        (default: the CLI's, every loaded backend); threads: a count or a
        list of counts; blocks, min_time (s), min_iters: the method;
        profile=False skips the per-node profile; dims: {name: value};
        inputs: a test_data_set folder.
    """
    args = ["bench"]
    if backends is not None:
        confs = [backends] if isinstance(backends, str) else list(backends)
        if confs and all(isinstance(c, str) for c in confs) and \
                not isinstance(backends, str) and \
                not any("," in c for c in confs):
            confs = [",".join(confs)]  # one configuration, several backends
        reg = _core.Registry(0, backend_paths)
        try:
            for c in confs:
                names, _ = reg.backend_list(_core.check_names(c, "backends"))
                args += ["--backends", ",".join(names)]
        finally:
            reg.close()
    thread_list = None
    if threads is not None:
        ts = threads if isinstance(threads, (list, tuple)) else [threads]
        thread_list = ",".join(str(_core.check_threads(t)) for t in ts)
        args += ["--threads", thread_list]
    for flag, v, kind in (("--blocks", blocks, int),
                          ("--min-time", min_time, (int, float)),
                          ("--min-iters", min_iters, int)):
        if v is not None:
            if isinstance(v, bool) or not isinstance(v, kind) or v <= 0:
                raise InvalidArgument("bench: %s wants a number > 0, got %r"
                                      % (flag[2:].replace("-", "_"), v))
            args += [flag, str(v)]
    if not profile:
        args.append("--no-profile")
    for k, v in (dims or {}).items():
        args += ["--dim", "%s=%s" % (k, v)]
    if inputs is not None:
        args += ["--inputs", os.fspath(inputs)]
    args += _cli_args(backend_paths, None)
    with tempfile.TemporaryDirectory(prefix="wmap-bench-") as tmp:
        path = _model_file(model, tmp)
        out = os.path.join(tmp, "baseline.json")
        r, cmd = _run_cli(args + [path, "-o", out], timeout)
        if r.returncode != 0 or not os.path.exists(out):
            _fail(r, cmd)
        with open(out) as f:
            return json.load(f)


def conform(backend="ref", suites=None, filter=None, data=None, strict=False,
            passes=None, backend_paths=None, threads=None, timeout=None):
    """Runs ONNX's backend test data with `wmap conform --json` and returns
    its records as a dict ("wmap.conform/1": backend, summary {passed,
    failed, claimed_but_failed, unsupported, skipped, random} and one case
    per test {name, suite, status, reason, ops, nodes, nodes_on_backend,
    nodes_generated, max_abs_err, time_us}). Failing cases are results,
    not exceptions; a usage error raises InvalidArgument.

    suites: list or comma list (node, pytorch-converted, pytorch-operator,
    simple, real); filter: a regex on the case name; data: the test data
    root (default $WMAP_ONNX_TESTDATA or Debian's libonnx-testdata).
    """
    if not isinstance(backend, str) or not backend:
        raise InvalidArgument("conform: backend wants a name, got %r"
                              % (backend,))
    args = ["conform", "--backend", backend, "--quiet"]
    if suites is not None:
        args += ["--suite", ",".join(_core.check_names(suites, "suites"))]
    if filter is not None:
        args += ["--filter", filter]
    if data is not None:
        args += ["--data", os.fspath(data)]
    if strict:
        args.append("--strict")
    if passes is not None:
        args += ["--passes", passes if isinstance(passes, str)
                 else ",".join(passes)] if passes else ["--no-passes"]
    args += _cli_args(backend_paths, threads)
    with tempfile.TemporaryDirectory(prefix="wmap-conform-") as tmp:
        out = os.path.join(tmp, "conform.json")
        r, cmd = _run_cli(args + ["--json", out], timeout)
        if r.returncode == 2 or not os.path.exists(out):
            _fail(r, cmd)
        with open(out) as f:
            return json.load(f)
