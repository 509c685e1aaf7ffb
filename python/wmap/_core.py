"""Models, backend registries and option checks shared by the session and
the tools."""

import ctypes
import os
import warnings

from . import _capi
from ._capi import lib
from .errors import InvalidArgument, check


def text(b):
    return b.decode("utf-8", "replace") if b is not None else None


class Graph:
    """An imported model (wm_graph_t), owned."""

    def __init__(self, model):
        self.ptr = ctypes.c_void_p()
        if isinstance(model, (bytes, bytearray, memoryview)):
            data = bytes(model)
            self.label = "<%d bytes>" % len(data)
            check(lib.wm_onnx_load_buffer(data, len(data), None,
                                          ctypes.byref(self.ptr)),
                  "loading a model from bytes")
        elif isinstance(model, (str, os.PathLike)):
            path = os.fspath(model)
            self.label = path
            check(lib.wm_onnx_load(os.fsencode(path), ctypes.byref(self.ptr)))
        else:
            raise InvalidArgument(
                "model wants a path (str or os.PathLike) or the bytes of an "
                "ONNX file, got %s" % type(model).__name__)

    def close(self):
        if self.ptr:
            lib.wm_graph_destroy(self.ptr)
            self.ptr = ctypes.c_void_p()

    def __del__(self):
        self.close()

    def inputs(self):
        """(name, wm_type_t copy, is_initializer) of every graph input."""
        out = []
        for i in range(lib.wm_graph_input_count(self.ptr)):
            t = lib.wm_graph_input_type(self.ptr, i).contents
            out.append((text(lib.wm_graph_input_name(self.ptr, i)),
                        type_copy(t),
                        bool(lib.wm_graph_input_is_initializer(self.ptr, i))))
        return out

    def outputs(self):
        """(name, wm_type_t copy) of every graph output."""
        out = []
        for i in range(lib.wm_graph_output_count(self.ptr)):
            t = lib.wm_graph_output_type(self.ptr, i).contents
            out.append((text(lib.wm_graph_output_name(self.ptr, i)),
                        type_copy(t)))
        return out


class TypeInfo:
    """A plain-Python copy of a wm_type_t."""

    def __init__(self, kind, elem_kind, dtype, rank, dims, dim_params):
        self.kind = kind
        self.elem_kind = elem_kind
        self.dtype = dtype
        self.rank = rank
        self.dims = dims
        self.dim_params = dim_params


def type_copy(t):
    rank = int(t.shape.rank)
    n = max(rank, 0)
    return TypeInfo(int(t.kind), int(t.elem_kind), int(t.dtype), rank,
                    [int(t.shape.dims[i]) for i in range(n)],
                    [text(t.dim_params[i]) for i in range(n)])


def check_threads(threads):
    """The thread count for the backends: |threads|, else
    $WMAP_NUM_THREADS, else 0 (all cores)."""
    if threads is None:
        env = os.environ.get("WMAP_NUM_THREADS", "")
        if not env:
            return 0
        try:
            threads = int(env)
        except ValueError:
            threads = -1
        if not 0 <= threads <= 4096:
            raise InvalidArgument(
                "WMAP_NUM_THREADS wants a count from 0 to 4096, got \"%s\""
                % env)
        return threads
    if isinstance(threads, bool) or not isinstance(threads, int) or \
            not 0 <= threads <= 4096:
        raise InvalidArgument(
            "threads wants a count from 0 to 4096 (0 = all cores), got %r"
            % (threads,))
    return threads


def check_names(value, what):
    """A list of names from a list of str or a comma-separated str."""
    if value is None:
        return None
    if isinstance(value, str):
        value = [v for v in value.split(",") if v]
    if not isinstance(value, (list, tuple)) or \
            not all(isinstance(v, str) and v for v in value):
        raise InvalidArgument("%s wants a list of names, got %r"
                              % (what, value))
    return list(value)


class Registry:
    """The backends found (wm_registry_t): ref built in, plugins from
    |paths|, WMAP_BACKEND_PATH and the folder beside libwmap."""

    def __init__(self, threads=0, paths=None):
        paths = check_names(paths, "backend_paths") or []
        self._paths = (ctypes.c_char_p * (len(paths) + 1))(
            *[os.fsencode(p) for p in paths])
        opts = _capi.RegistryOptions()
        opts.paths = ctypes.cast(self._paths, ctypes.POINTER(ctypes.c_char_p))
        opts.n_paths = len(paths)
        opts.num_threads = threads
        opts.quiet = True
        opts.builtin_query = _capi.REF_QUERY
        self.ptr = ctypes.c_void_p()
        check(lib.wm_registry_create(ctypes.byref(opts),
                                     ctypes.byref(self.ptr)),
              "opening the backends")
        self._warn_faults(paths)

    # wm_refusal_kind_t: a plugin that crashed, exited or hung while probed,
    # and one whose name another file took.
    _LOUD_KINDS = (2, 3)
    _warned = set()  # each path once per process, as the CLI does

    def _warn_faults(self, paths):
        """Warns, as the CLI's quiet commands do, of refused plugins that
        crashed, exited or hung, of names taken twice, and of refused
        files the caller named; other refusals (no driver) stay quiet."""
        named = {os.fsdecode(os.fsencode(p)) for p in paths}
        for i in range(lib.wm_registry_refused_count(self.ptr)):
            path = text(lib.wm_registry_refused_path(self.ptr, i))
            loud = lib.wm_registry_refused_kind(self.ptr, i) in \
                self._LOUD_KINDS or path in named
            if loud and path not in Registry._warned:
                Registry._warned.add(path)
                warnings.warn("wmap: refused backend plugin %s: %s" % (
                    path, text(lib.wm_registry_refused_reason(self.ptr, i))),
                    RuntimeWarning, stacklevel=4)

    def close(self):
        if self.ptr:
            lib.wm_registry_destroy(self.ptr)
            self.ptr = ctypes.c_void_p()

    def __del__(self):
        self.close()

    def names(self):
        return [text(lib.wm_backend_name(lib.wm_registry_backend(self.ptr, i)))
                for i in range(lib.wm_registry_count(self.ptr))]

    def find(self, name):
        b = ctypes.c_void_p()
        check(lib.wm_registry_find(self.ptr, name.encode(), ctypes.byref(b)))
        return b

    def backend_list(self, names):
        """The backends to place on, in order: |names|, or the default:
        cpu (ref when no cpu plugin was found, with a warning)."""
        if names is None:
            if "cpu" in self.names():
                names = ["cpu"]
            else:
                warnings.warn(
                    "wmap: no cpu backend plugin found beside %s (nor in "
                    "WMAP_BACKEND_PATH); running on ref, the reference "
                    "backend" % _capi.LIBRARY_PATH, RuntimeWarning,
                    stacklevel=3)
                names = ["ref"]
        if not names:
            raise InvalidArgument("backends is empty; want at least one of "
                                  + ", ".join(self.names()))
        if len(names) > _capi.SESSION_MAX_BACKENDS:
            raise InvalidArgument("at most %d backends, got %d: %s" % (
                _capi.SESSION_MAX_BACKENDS, len(names), ",".join(names)))
        if len(set(names)) != len(names):
            raise InvalidArgument("a backend is listed twice in %s"
                                  % ",".join(names))
        ptrs = [self.find(n) for n in names]
        arr = (ctypes.c_void_p * len(ptrs))(*[p.value for p in ptrs])
        return names, arr

    def describe(self):
        loaded = []
        for i in range(lib.wm_registry_count(self.ptr)):
            b = lib.wm_registry_backend(self.ptr, i)
            loaded.append({"name": text(lib.wm_backend_name(b)),
                           "version": text(lib.wm_backend_version(b)),
                           "origin": text(lib.wm_backend_origin(b))})
        refused = [{"path": text(lib.wm_registry_refused_path(self.ptr, i)),
                    "reason": text(lib.wm_registry_refused_reason(self.ptr, i))}
                   for i in range(lib.wm_registry_refused_count(self.ptr))]
        return loaded, refused


def backends(threads=None, backend_paths=None):
    """The backends wmap can use here: {"backends": [{name, version,
    origin}], "refused": [{path, reason}]} (as `wmap backends` lists
    them)."""
    reg = Registry(check_threads(threads), backend_paths)
    try:
        loaded, refused = reg.describe()
    finally:
        reg.close()
    return {"backends": loaded, "refused": refused}


def bind_dims(graph, dims, what="dims"):
    """Binds symbolic dims {name: value} in |graph|."""
    if dims is None:
        return {}
    if not isinstance(dims, dict):
        raise InvalidArgument("%s wants a dict {name: value}, got %s"
                              % (what, type(dims).__name__))
    for name, value in dims.items():
        if not isinstance(name, str) or isinstance(value, bool) or \
                not isinstance(value, int) or value < 1:
            raise InvalidArgument("%s: %r=%r wants a name and a whole number "
                                  ">= 1" % (what, name, value))
        check(lib.wm_graph_bind_dim(graph.ptr, name.encode(), value),
              "binding dim \"%s\"" % name)
    return dict(dims)
