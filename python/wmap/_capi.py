"""libwmap through ctypes: finding and loading the library, mirrors of the
small plain-data structs of include/wmap/*.h and the prototypes of the
functions the package calls.

The library is looked for in this order:

1. the copy bundled in the package: wmap/_lib/libwmap.so* (the backend
   plugins beside it in wmap/_lib/wmap/backends, where libwmap's registry
   finds them);
2. the file the environment variable WMAP_LIBRARY names;
3. the system: ctypes.util.find_library("wmap"), then the libdir of
   `pkg-config --variable=libdir wmap`.

The struct mirrors must match the headers of the library loaded, so its
wm_version() must equal the package's version; any other is refused.
"""

import ctypes
import ctypes.util
import glob
import os
import subprocess

from ._version import __version__

c_bool = ctypes.c_bool
c_char_p = ctypes.c_char_p
c_double = ctypes.c_double
c_int = ctypes.c_int
c_int32 = ctypes.c_int32
c_int64 = ctypes.c_int64
c_size_t = ctypes.c_size_t
c_uint32 = ctypes.c_uint32
c_uint64 = ctypes.c_uint64
c_void_p = ctypes.c_void_p
POINTER = ctypes.POINTER

MAX_RANK = 8  # WM_MAX_RANK
SESSION_MAX_BACKENDS = 8  # WM_SESSION_MAX_BACKENDS
PEAKS_MAX_BACKENDS = 16  # WM_PEAKS_MAX_BACKENDS
PEAKS_SOFTWARE_CAP = 1536  # WM_PEAKS_SOFTWARE_CAP

# wm_type_kind_t
TYPE_TENSOR, TYPE_SEQUENCE, TYPE_OPTIONAL, TYPE_MAP, TYPE_SPARSE_TENSOR = range(5)
# wm_placement_mode_t
PLACEMENT_FALLBACK, PLACEMENT_STRICT = 0, 1
# wm_kernels_t
KERNELS = {"auto": 0, "library": 1, "generated": 2}

PKG_DIR = os.path.dirname(os.path.abspath(__file__))
BUNDLED_LIB_DIR = os.path.join(PKG_DIR, "_lib")
# The CLI lives beside the library (a folder named wmap is there already):
# it finds the plugins in _lib/wmap/backends as libwmap does.
BUNDLED_CLI = os.path.join(BUNDLED_LIB_DIR, "wmap-cli")


# ------------------------------------------------------------ struct mirrors
# Each mirrors the struct of the same name in include/wmap (field for field,
# in order); tests/test_layout.py compares sizes and offsets with a C
# compiler's where one is available.


class Shape(ctypes.Structure):  # wm_shape_t
    _fields_ = [("rank", c_int32), ("dims", c_int64 * MAX_RANK)]


class Type(ctypes.Structure):  # wm_type_t
    _fields_ = [
        ("kind", c_int),
        ("elem_kind", c_int),
        ("dtype", c_int),
        ("shape", Shape),
        ("dim_params", c_char_p * MAX_RANK),
    ]


class Tensor(ctypes.Structure):  # wm_tensor_t
    _fields_ = [
        ("dtype", c_int),
        ("shape", Shape),
        ("count", c_size_t),
        ("nbytes", c_size_t),
        ("data", c_void_p),
        ("borrowed", c_bool),
    ]


class Item(ctypes.Structure):  # wm_item_t
    pass


Item._fields_ = [
    ("kind", c_int),
    ("tensor", POINTER(Tensor)),
    ("elems", POINTER(Item)),
    ("count", c_size_t),
    ("elem_kind", c_int),
    ("elem_dtype", c_int),
]


class StrBuf(ctypes.Structure):  # wm_strbuf_t
    _fields_ = [
        ("data", c_void_p),
        ("len", c_size_t),
        ("cap", c_size_t),
        ("failed", c_bool),
    ]


class RegistryOptions(ctypes.Structure):  # wm_registry_options_t
    _fields_ = [
        ("paths", POINTER(c_char_p)),
        ("n_paths", c_size_t),
        ("num_threads", c_uint32),
        ("debug", c_bool),
        ("quiet", c_bool),
        ("no_env", c_bool),
        ("install_dir", c_char_p),
        ("builtin_query", c_void_p),
    ]


class SessionOptions(ctypes.Structure):  # wm_session_options_t
    _fields_ = [
        ("backends", POINTER(c_void_p)),
        ("backend_count", c_size_t),
        ("fallback", c_void_p),
        ("mode", c_int),
        ("passes", c_char_p),
        ("release_weights", c_bool),
        ("no_in_place", c_bool),
        ("kernels", c_int),
        ("max_iterations", c_int64),
        ("max_sequence_length", c_int64),
    ]


class ZooKey(ctypes.Structure):  # wm_zoo_key_t
    _fields_ = [
        ("name", c_char_p),
        ("default", c_int64),  # def
        ("min", c_int64),
        ("max", c_int64),
        ("doc", c_char_p),
    ]


class ZooModel(ctypes.Structure):  # wm_zoo_model_t
    _fields_ = [
        ("name", c_char_p),
        ("description", c_char_p),
        ("key_count", c_size_t),
        ("keys", POINTER(ZooKey)),
    ]


class Machine(ctypes.Structure):  # wm_machine_t
    _fields_ = [
        ("model", ctypes.c_char * 128),
        ("cores", c_int32),
        ("flags_hash", c_uint64),
        ("kernel", ctypes.c_char * 80),
        ("fingerprint", ctypes.c_char * 17),
    ]


class PeaksBackend(ctypes.Structure):  # wm_peaks_backend_t
    _fields_ = [
        ("name", ctypes.c_char * 64),
        ("target", ctypes.c_char * 128),
        ("host", c_bool),
        ("gemm_fp32", c_double * 2),
        ("gemm_n", c_int64),
        ("gemm_note", ctypes.c_char * 160),
        ("declared_fp32", c_double),
        ("declared_fp16", c_double),
        ("declared_bw", c_double),
    ]


class Peaks(ctypes.Structure):  # wm_peaks_t
    _fields_ = [
        ("machine", Machine),
        ("measured_at", c_int64),
        ("from_cache", c_bool),
        ("threads", c_int32),
        ("fma_fp32", c_double * 2),
        ("fma_fp64", c_double * 2),
        ("triad_gbs", c_double * 2),
        ("isa", ctypes.c_char * 16),
        ("software", ctypes.c_char * 17),
        ("software_detail", ctypes.c_char * PEAKS_SOFTWARE_CAP),
        ("n_backends", c_size_t),
        ("backends", PeaksBackend * PEAKS_MAX_BACKENDS),
    ]


# wm_status_t (*open_one)(void *ctx, wm_registry_t **out)
OPEN_ONE_FN = ctypes.CFUNCTYPE(c_void_p, c_void_p, POINTER(c_void_p))


class PeaksOptions(ctypes.Structure):  # wm_peaks_options_t
    _fields_ = [
        ("registry", c_void_p),
        ("open_one", OPEN_ONE_FN),
        ("open_ctx", c_void_p),
        ("refresh", c_bool),
        ("no_cache", c_bool),
        ("quick", c_bool),
        ("cache_dir", c_char_p),
    ]


class MapDim(ctypes.Structure):  # wm_map_dim_t
    _fields_ = [("name", c_char_p), ("value", c_int64)]


class MapParallel(ctypes.Structure):  # wm_map_parallel_t
    _fields_ = [
        ("dp", c_int32),
        ("tp", c_int32),
        ("pp", c_int32),
        ("microbatches", c_int32),
        ("inference", c_bool),
        ("link_gbs", c_double),
        ("grad_bytes", c_int32),
    ]


class MapOptions(ctypes.Structure):  # wm_map_options_t
    _fields_ = [
        ("model", c_char_p),
        ("backends", POINTER(c_void_p)),
        ("backend_count", c_size_t),
        ("fallback", c_void_p),
        ("peaks", POINTER(Peaks)),
        ("dims", POINTER(MapDim)),
        ("n_dims", c_size_t),
        ("parallel", POINTER(MapParallel)),
        ("critical_backend", c_size_t),
        ("node_seconds", POINTER(c_double)),
        ("node_backends", POINTER(c_char_p)),
        ("times_source", c_char_p),
        ("threads", c_int32),
    ]


class CompareOptions(ctypes.Structure):  # wm_compare_options_t
    _fields_ = [
        ("noise", c_double),
        ("alpha", c_double),
        ("resamples", c_size_t),
        ("seed", c_uint64),
        ("force", c_bool),
    ]


# The mirrors and the C type each stands for (for the layout test).
MIRRORS = {
    "wm_shape_t": Shape,
    "wm_type_t": Type,
    "wm_tensor_t": Tensor,
    "wm_item_t": Item,
    "wm_strbuf_t": StrBuf,
    "wm_registry_options_t": RegistryOptions,
    "wm_session_options_t": SessionOptions,
    "wm_zoo_key_t": ZooKey,
    "wm_zoo_model_t": ZooModel,
    "wm_machine_t": Machine,
    "wm_peaks_backend_t": PeaksBackend,
    "wm_peaks_t": Peaks,
    "wm_peaks_options_t": PeaksOptions,
    "wm_map_dim_t": MapDim,
    "wm_map_parallel_t": MapParallel,
    "wm_map_options_t": MapOptions,
    "wm_compare_options_t": CompareOptions,
}
# Python field names that differ from the C ones (C keywords in Python).
MIRROR_C_NAMES = {("wm_zoo_key_t", "default"): "def"}

# ------------------------------------------------------------- prototypes

S = c_void_p  # wm_status_t
VP = c_void_p
PROTOTYPES = {
    # base.h
    "wm_version": (c_char_p, []),
    "wm_status_code": (c_int, [S]),
    "wm_status_message": (c_char_p, [S]),
    "wm_status_code_name": (c_char_p, [c_int]),
    "wm_status_free": (None, [S]),
    "wm_strbuf_init": (None, [POINTER(StrBuf)]),
    "wm_strbuf_deinit": (None, [POINTER(StrBuf)]),
    "wm_strbuf_str": (c_char_p, [POINTER(StrBuf)]),
    # graph.h
    "wm_dtype_name": (c_char_p, [c_int]),
    "wm_dtype_size": (c_size_t, [c_int]),
    "wm_tensor_create": (S, [c_int, POINTER(Shape), POINTER(POINTER(Tensor))]),
    "wm_tensor_wrap": (S, [c_int, POINTER(Shape), VP, POINTER(POINTER(Tensor))]),
    "wm_tensor_destroy": (None, [POINTER(Tensor)]),
    "wm_tensor_set_string": (S, [POINTER(Tensor), c_size_t, c_char_p, c_size_t]),
    "wm_item_deinit": (None, [POINTER(Item)]),
    "wm_graph_destroy": (None, [VP]),
    "wm_graph_bind_dim": (S, [VP, c_char_p, c_int64]),
    "wm_graph_find_value": (c_int32, [VP, c_char_p]),
    "wm_graph_set_type": (S, [VP, c_int32, POINTER(Type)]),
    "wm_graph_input_count": (c_size_t, [VP]),
    "wm_graph_input_name": (c_char_p, [VP, c_size_t]),
    "wm_graph_input_type": (POINTER(Type), [VP, c_size_t]),
    "wm_graph_input_is_initializer": (c_bool, [VP, c_size_t]),
    "wm_graph_output_count": (c_size_t, [VP]),
    "wm_graph_output_name": (c_char_p, [VP, c_size_t]),
    "wm_graph_output_type": (POINTER(Type), [VP, c_size_t]),
    # onnx.h
    "wm_onnx_load": (S, [c_char_p, POINTER(VP)]),
    "wm_onnx_load_buffer": (S, [c_char_p, c_size_t, c_char_p, POINTER(VP)]),
    "wm_onnx_save_buffer": (S, [VP, POINTER(VP), POINTER(c_size_t)]),
    "wm_onnx_save": (S, [VP, c_char_p]),
    "wm_onnx_item_load": (S, [c_char_p, c_int, POINTER(Item), POINTER(VP)]),
    "wm_onnx_item_save": (S, [POINTER(Item), c_char_p, c_char_p]),
    # plugin.h
    "wm_registry_create": (S, [POINTER(RegistryOptions), POINTER(VP)]),
    "wm_registry_destroy": (None, [VP]),
    "wm_registry_find": (S, [VP, c_char_p, POINTER(VP)]),
    "wm_registry_count": (c_size_t, [VP]),
    "wm_registry_backend": (VP, [VP, c_size_t]),
    "wm_registry_refused_count": (c_size_t, [VP]),
    "wm_registry_refused_path": (c_char_p, [VP, c_size_t]),
    "wm_registry_refused_reason": (c_char_p, [VP, c_size_t]),
    "wm_registry_refused_kind": (c_int, [VP, c_size_t]),
    "wm_backend_name": (c_char_p, [VP]),
    "wm_backend_version": (c_char_p, [VP]),
    "wm_backend_origin": (c_char_p, [VP]),
    # session.h
    "wm_session_create_placed": (S, [VP, POINTER(SessionOptions), POINTER(VP)]),
    "wm_session_destroy": (None, [VP]),
    "wm_session_run_items": (
        S, [VP, POINTER(c_char_p), POINTER(Item), c_size_t, POINTER(Item)]),
    "wm_session_placement_json": (None, [VP, POINTER(StrBuf)]),
    "wm_passes_check": (S, [c_char_p]),
    # zoo.h
    "wm_zoo_count": (c_size_t, []),
    "wm_zoo_at": (POINTER(ZooModel), [c_size_t]),
    "wm_zoo_build": (S, [c_char_p, POINTER(VP)]),
    # map.h
    "wm_peaks_get": (S, [POINTER(PeaksOptions), POINTER(Peaks)]),
    "wm_peaks_load": (S, [c_char_p, POINTER(Peaks)]),
    "wm_map_build": (S, [VP, POINTER(MapOptions), POINTER(VP)]),
    "wm_map_destroy": (None, [VP]),
    "wm_map_to_json": (None, [VP, POINTER(StrBuf)]),
    "wm_map_parse_parallel": (S, [c_char_p, POINTER(MapParallel)]),
    # bench.h
    "wm_baseline_load": (S, [c_char_p, POINTER(VP)]),
    "wm_baseline_destroy": (None, [VP]),
    "wm_compare_baselines": (
        S, [VP, VP, c_char_p, c_char_p, POINTER(CompareOptions), POINTER(VP)]),
    "wm_compare_destroy": (None, [VP]),
    "wm_compare_to_json": (None, [VP, POINTER(StrBuf)]),
}


def _declare(lib):
    for name, (restype, argtypes) in PROTOTYPES.items():
        try:
            fn = getattr(lib, name)
        except AttributeError as e:
            raise ImportError(
                "wmap: %s does not export %s (a libwmap other than %s?)"
                % (lib._name, name, __version__)) from e
        fn.restype = restype
        fn.argtypes = argtypes


def _candidates():
    """Where libwmap may be, in the order tried: (path, origin)."""
    bundled = sorted(glob.glob(os.path.join(BUNDLED_LIB_DIR, "libwmap.so*")))
    for path in bundled:
        yield path, "bundled"
    env = os.environ.get("WMAP_LIBRARY")
    if env:
        yield env, "WMAP_LIBRARY"
    found = ctypes.util.find_library("wmap")
    if found:
        yield found, "system"
    try:
        libdir = subprocess.run(
            ["pkg-config", "--variable=libdir", "wmap"], capture_output=True,
            text=True, timeout=10).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        libdir = ""
    if libdir:
        for path in sorted(glob.glob(os.path.join(libdir, "libwmap.so*"))):
            yield path, "pkg-config"


def _load():
    tried = []
    for path, origin in _candidates():
        try:
            lib = ctypes.CDLL(path)
        except OSError as e:
            tried.append("%s (%s): %s" % (path, origin, e))
            if origin == "WMAP_LIBRARY":
                raise ImportError(
                    "wmap: WMAP_LIBRARY=%s cannot be loaded: %s" % (path, e))
            continue
        try:
            version_fn = lib.wm_version
        except AttributeError:
            tried.append("%s (%s): no wm_version" % (path, origin))
            continue
        version_fn.restype = c_char_p
        version_fn.argtypes = []
        version = version_fn().decode()
        if version != __version__:
            raise ImportError(
                "wmap: %s (%s) is libwmap %s, but this package is %s: its "
                "ctypes mirrors follow the %s headers; install the matching "
                "libwmap or package" % (path, origin, version, __version__,
                                        __version__))
        _declare(lib)
        return lib, path, origin
    raise ImportError(
        "wmap: libwmap not found: not bundled in %s, WMAP_LIBRARY unset, "
        "and neither ctypes.util.find_library('wmap') nor `pkg-config "
        "--variable=libdir wmap` finds it%s" % (
            BUNDLED_LIB_DIR, "; tried: " + "; ".join(tried) if tried else ""))


lib, LIBRARY_PATH, LIBRARY_ORIGIN = _load()
libc = ctypes.CDLL(None)
libc.free.restype = None
libc.free.argtypes = [c_void_p]

# The address of the built-in reference backend's query function.
REF_QUERY = ctypes.cast(lib.wm_ref_plugin_query, c_void_p).value


def strbuf_text(fill, *args):
    """Calls fill(*args, &buf) on a fresh wm_strbuf_t; returns its text."""
    buf = StrBuf()
    lib.wm_strbuf_init(ctypes.byref(buf))
    try:
        fill(*args, ctypes.byref(buf))
        if buf.failed:
            raise MemoryError("wmap: out of memory writing a report")
        return lib.wm_strbuf_str(ctypes.byref(buf)).decode("utf-8", "replace")
    finally:
        lib.wm_strbuf_deinit(ctypes.byref(buf))
