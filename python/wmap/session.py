"""InferenceSession: a model placed on backends and run, shaped like
onnxruntime's."""

import collections.abc
import ctypes
import json
import threading

import numpy as np

from . import _capi, _core, _tensors
from ._capi import lib
from .errors import InvalidArgument, check

_KIND_NAMES = {_capi.TYPE_TENSOR: "tensor", _capi.TYPE_SEQUENCE: "seq",
               _capi.TYPE_OPTIONAL: "optional", _capi.TYPE_MAP: "map",
               _capi.TYPE_SPARSE_TENSOR: "sparse_tensor"}


def _type_string(info):
    """onnxruntime's spelling of a value type: "tensor(float)",
    "seq(tensor(int64))", "optional(tensor(float))"."""
    tensor = "tensor(%s)" % _tensors.dtype_name(info.dtype)
    if info.kind == _capi.TYPE_TENSOR:
        return tensor
    if info.kind == _capi.TYPE_SEQUENCE:
        return "seq(%s)" % tensor
    if info.kind == _capi.TYPE_OPTIONAL:
        inner = "seq(%s)" % tensor if \
            info.elem_kind == _capi.TYPE_SEQUENCE else tensor
        return "optional(%s)" % inner
    return "%s(%s)" % (_KIND_NAMES.get(info.kind, "unknown"), tensor)


def _shape_list(info):
    """Dims as ints, symbolic ones as their names, unknown ones None (None
    for an unknown rank)."""
    if info.rank < 0:
        return None
    return [d if d >= 0 else (p if p else None)
            for d, p in zip(info.dims, info.dim_params)]


def _shape_text(info):
    shape = _shape_list(info)
    if shape is None:
        return "of unknown rank"
    return "[" + ",".join("?" if d is None else str(d) for d in shape) + "]"


def _limit(value, name):
    """A limit option: None (0, the library's default) or a count >= 1."""
    if value is None:
        return 0
    if isinstance(value, bool) or not isinstance(value, int) or value < 1 \
            or value > 2**62:
        raise InvalidArgument("%s wants a count from 1 to 2^62, got %r"
                              % (name, value))
    return value


class NodeArg:
    """A graph input or output: name, type ("tensor(float)") and shape
    (ints; symbolic dims as str; unknown dims None)."""

    def __init__(self, name, info):
        self.name = name
        self.type = _type_string(info)
        self.shape = _shape_list(info)
        self._info = info

    def __repr__(self):
        return "NodeArg(name=%r, type=%r, shape=%r)" % (
            self.name, self.type, self.shape)


class InferenceSession:
    """Loads an ONNX model (a path or its bytes) and places its nodes on
    backends (wm_session_create_placed), as `wmap run` does.

    backends: names in order of preference (a list, or "cpu,ref"); default
        ["cpu"] (["ref"] with a warning where no cpu plugin is found).
        Nodes none of them takes run on ref (the fallback) unless strict.
    threads: the backends' thread count (0 = all cores; default
        $WMAP_NUM_THREADS, else 0).
    strict: fail listing every node no listed backend takes instead of
        running it on ref.
    passes: comma list of graph passes ("fold,dead"), "" for none, None
        for all (as --passes).
    dims: {name: value} binding symbolic dims before planning.
    kernels: "auto", "library" or "generated" (as --impl).
    no_in_place: never let an output share an input's bytes.
    backend_paths: more plugin folders or .so files (as --backend-path).
    max_iterations, max_sequence_length: limits for untrusted control flow
        (as --max-iterations, --max-sequence-length; None: the library's
        defaults, 10,000,000 iterations and 100,000 elements).

    One run at a time per session: run() holds a lock.
    """

    def __init__(self, model, backends=None, threads=None, strict=False,
                 passes=None, dims=None, kernels="auto", no_in_place=False,
                 backend_paths=None, max_iterations=None,
                 max_sequence_length=None):
        self._session = ctypes.c_void_p()
        self._registry = None
        self._graph = None
        self._lock = threading.Lock()
        names = _core.check_names(backends, "backends")
        if kernels not in _capi.KERNELS:
            raise InvalidArgument("kernels wants one of %s, got %r" % (
                ", ".join(_capi.KERNELS), kernels))
        if passes is not None and not isinstance(passes, str):
            if isinstance(passes, (list, tuple)):
                passes = ",".join(passes)
            else:
                raise InvalidArgument(
                    "passes wants a comma list or a list of pass names, "
                    "got %r" % (passes,))
        if passes is not None:
            check(lib.wm_passes_check(passes.encode()))
        threads = _core.check_threads(threads)
        self._graph = _core.Graph(model)
        self._model = self._graph.label
        _core.bind_dims(self._graph, dims)
        self._inputs = [(n, t, init) for n, t, init in self._graph.inputs()]
        self._registry = _core.Registry(threads, backend_paths)
        self._backends, arr = self._registry.backend_list(names)
        self._backend_arr = arr
        opts = _capi.SessionOptions()
        opts.backends = ctypes.cast(arr, ctypes.POINTER(ctypes.c_void_p))
        opts.backend_count = len(self._backends)
        opts.fallback = self._registry.find("ref")
        opts.mode = _capi.PLACEMENT_STRICT if strict else \
            _capi.PLACEMENT_FALLBACK
        opts.passes = passes.encode() if passes is not None else None
        opts.release_weights = True  # the graph serves this session only
        opts.no_in_place = bool(no_in_place)
        opts.kernels = _capi.KERNELS[kernels]
        opts.max_iterations = _limit(max_iterations, "max_iterations")
        opts.max_sequence_length = _limit(max_sequence_length,
                                          "max_sequence_length")
        check(lib.wm_session_create_placed(self._graph.ptr, ctypes.byref(opts),
                                           ctypes.byref(self._session)),
              "preparing \"%s\"" % self._model)
        self._outputs = self._graph.outputs()
        self._output_index = {n: i for i, (n, _) in enumerate(self._outputs)}
        self._input_info = {n: (t, init) for n, t, init in self._inputs}

    # ------------------------------------------------------------ lifetime

    def close(self):
        """Frees the session, its graph and its backends (also done when
        the object is collected)."""
        if self._session:
            lib.wm_session_destroy(self._session)
            self._session = ctypes.c_void_p()
        if self._graph is not None:
            self._graph.close()
        if self._registry is not None:
            self._registry.close()

    def __del__(self):
        self.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    # ------------------------------------------------------------ metadata

    def get_inputs(self):
        """The inputs a run takes: graph inputs that are not initializers."""
        return [NodeArg(n, t) for n, t, init in self._inputs if not init]

    def get_overridable_initializers(self):
        """Graph inputs that are initializers: a run may leave them out."""
        return [NodeArg(n, t) for n, t, init in self._inputs if init]

    def get_outputs(self):
        """The graph outputs (types as inferred when the session was made)."""
        return [NodeArg(n, t) for n, t in self._outputs]

    def get_providers(self):
        """The backends nodes are placed on, in order (ref runs the rest
        unless strict)."""
        return list(self._backends)

    def placement_report(self):
        """The placement report ("wmap.placement/1") of the last run (before
        any: of the plan made at creation) as a dict."""
        self._check_open()
        return json.loads(_capi.strbuf_text(lib.wm_session_placement_json,
                                            self._session))

    def placement(self):
        """Where each node runs and why: the "nodes" list of
        placement_report() (name, op, domain, backend, impl, level,
        fell_back, pass, runs_in, runs_as, kernel, refusals)."""
        return self.placement_report().get("nodes", [])

    # ----------------------------------------------------------------- run

    def _check_open(self):
        if not self._session:
            raise InvalidArgument("the session of \"%s\" is closed"
                                  % self._model)

    def _bind(self, items, name, value, info, what):
        """The wm_item_t that |value| binds to an input of type |info|."""
        if info.kind == _capi.TYPE_TENSOR:
            return self._bind_tensor(items, value, info, what)
        if info.kind == _capi.TYPE_SEQUENCE:
            if not isinstance(value, (list, tuple)):
                raise InvalidArgument(
                    "%s is a %s: it wants a list of arrays, got %s"
                    % (what, _type_string(info), type(value).__name__))
            elems = [self._bind_tensor(items, v, info, "%s[%d]" % (what, i),
                                       check_shape=False)
                     for i, v in enumerate(value)]
            return items.items(elems, _capi.TYPE_SEQUENCE,
                               _capi.TYPE_TENSOR, info.dtype)
        if info.kind == _capi.TYPE_OPTIONAL:
            inner = None
            if value is not None:
                sub = _core.TypeInfo(info.elem_kind, _capi.TYPE_TENSOR,
                                     info.dtype, info.rank, info.dims,
                                     info.dim_params)
                inner = self._bind(items, name, value, sub, what)
            return items.items([inner] if inner is not None else [],
                               _capi.TYPE_OPTIONAL, info.elem_kind,
                               info.dtype)
        raise InvalidArgument("%s is a %s, which the package cannot bind"
                              % (what, _type_string(info)))

    def _bind_tensor(self, items, value, info, what, check_shape=True):
        if value is None:
            raise InvalidArgument("%s wants a numpy array of %s, got %r"
                                  % (what, _type_string(info), value))
        arr = _tensors.prepare_array(value, info.dtype, what)
        if arr.ndim > _capi.MAX_RANK:
            raise InvalidArgument("%s has rank %d; wmap takes at most %d"
                                  % (what, arr.ndim, _capi.MAX_RANK))
        if check_shape and info.rank >= 0:
            if arr.ndim != info.rank:
                raise InvalidArgument(
                    "%s wants rank %d %s, got shape %s (rank %d)"
                    % (what, info.rank, _shape_text(info), tuple(arr.shape),
                       arr.ndim))
            for i, (want, got) in enumerate(zip(info.dims, arr.shape)):
                if want >= 0 and want != got:
                    raise InvalidArgument(
                        "%s wants shape %s, got %s: dim %d is %d, want %d"
                        % (what, _shape_text(info), tuple(arr.shape), i, got,
                           want))
        return items.tensor(arr, info.dtype)

    def run(self, output_names, input_feed, run_options=None):
        """Runs the model once on |input_feed| ({input name: array}) and
        returns the outputs named in |output_names| (None: all), in that
        order, as numpy arrays (a sequence output as a list of arrays, an
        optional one as None or its value).

        Inputs wrap the arrays' buffers without a copy when C-contiguous,
        native-endian and of the input's dtype (other layouts are copied;
        other dtypes are an error). Output arrays view the tensors wmap
        made, freed when the last view is collected.
        """
        del run_options  # accepted for onnxruntime compatibility
        self._check_open()
        if not isinstance(input_feed, collections.abc.Mapping):
            raise InvalidArgument("input_feed wants a dict {input name: "
                                  "array}, got %s" % type(input_feed).__name__)
        if output_names is None:
            wanted = list(range(len(self._outputs)))
        else:
            if isinstance(output_names, str):
                output_names = [output_names]
            wanted = []
            for n in output_names:
                if n not in self._output_index:
                    raise InvalidArgument(
                        "\"%s\" is not an output of \"%s\"; its outputs are "
                        "%s" % (n, self._model, ", ".join(
                            o for o, _ in self._outputs)))
                wanted.append(self._output_index[n])
        for n in input_feed:
            if n not in self._input_info:
                raise InvalidArgument(
                    "\"%s\" is not an input of \"%s\"; its inputs are %s"
                    % (n, self._model, ", ".join(
                        a.name for a in self.get_inputs()) or "none"))
        missing = [n for n, _, init in self._inputs
                   if not init and n not in input_feed]
        if missing:
            raise InvalidArgument(
                "\"%s\": no value for input%s %s" % (
                    self._model, "s" if len(missing) > 1 else "",
                    ", ".join("\"%s\"" % m for m in missing)))
        items = _tensors.InputItems()
        try:
            names = []
            bound = []
            for n, value in input_feed.items():
                info, _ = self._input_info[n]
                bound.append(self._bind(items, n, value, info,
                                        "input \"%s\"" % n))
                names.append(n.encode())
            n_in = len(bound)
            c_names = (ctypes.c_char_p * (n_in + 1))(*names)
            c_inputs = (_capi.Item * (n_in + 1))(*bound)
            outs = (_capi.Item * (len(self._outputs) + 1))()
            with self._lock:
                self._check_open()
                status = lib.wm_session_run_items(
                    self._session, c_names, c_inputs, n_in, outs)
            if status:
                for i in range(len(self._outputs)):
                    lib.wm_item_deinit(ctypes.byref(outs[i]))
                check(status, "running \"%s\"" % self._model)
            results = {}
            try:
                for i in wanted:
                    if i not in results:
                        results[i] = _tensors.item_to_python(
                            outs[i], "output \"%s\"" % self._outputs[i][0])
            finally:
                for i in range(len(self._outputs)):
                    lib.wm_item_deinit(ctypes.byref(outs[i]))
            return [results[i] for i in wanted]
        finally:
            items.close()


_KINDS = {"tensor": _capi.TYPE_TENSOR, "sequence": _capi.TYPE_SEQUENCE,
          "optional": _capi.TYPE_OPTIONAL}


def load_tensor(path, kind="tensor"):
    """Reads a TensorProto, SequenceProto or OptionalProto file, such as a
    test_data_set's input_0.pb or what `wmap run --save` writes: a numpy
    array, a list of them for a sequence, None or the value for an
    optional. The two containers share one wire layout, so |kind|
    ("tensor", "sequence" or "optional"; a NodeArg's type starts with
    "seq(" or "optional(" for the latter two) says which to read first."""
    import os
    if kind not in _KINDS:
        raise InvalidArgument("load_tensor: kind wants one of %s, got %r"
                              % (", ".join(_KINDS), kind))
    item = _capi.Item()
    check(lib.wm_onnx_item_load(os.fsencode(os.fspath(path)), _KINDS[kind],
                                ctypes.byref(item), None))
    return _tensors.item_to_python(item, "\"%s\"" % os.fspath(path))


def save_tensor(array, path, name=""):
    """Writes |array| as a TensorProto file named |name|."""
    import os
    arr = np.asarray(array)
    code = _tensors.dtype_code(arr.dtype)
    if code is None:
        raise InvalidArgument("save_tensor: numpy %s has no ONNX dtype"
                              % arr.dtype)
    if arr.ndim > _capi.MAX_RANK:
        raise InvalidArgument("save_tensor: rank %d; wmap takes at most %d"
                              % (arr.ndim, _capi.MAX_RANK))
    arr = _tensors.prepare_array(arr, code, "save_tensor")
    items = _tensors.InputItems()
    try:
        item = items.tensor(arr, code)
        check(lib.wm_onnx_item_save(ctypes.byref(item), name.encode(),
                                    os.fsencode(os.fspath(path))))
    finally:
        items.close()
