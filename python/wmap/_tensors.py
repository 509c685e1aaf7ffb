"""numpy arrays to and from wm_tensor_t and wm_item_t.

Inputs wrap the array's buffer (wm_tensor_wrap) when it is C-contiguous,
native-endian and of the input's dtype; outputs are numpy arrays viewing
the wm_tensor_t's data, which a finalizer frees with the last view."""

import ctypes

import numpy as np

from . import _capi
from ._capi import lib
from .errors import InvalidArgument, Unimplemented, check

try:  # optional: numpy dtypes for bfloat16 and the float8 types
    import ml_dtypes as _ml
except ImportError:  # pragma: no cover - depends on the environment
    _ml = None

# ONNX TensorProto.DataType numbers (wm_dtype_t) and numpy dtypes.
_NUMPY = {
    1: np.dtype(np.float32),
    2: np.dtype(np.uint8),
    3: np.dtype(np.int8),
    4: np.dtype(np.uint16),
    5: np.dtype(np.int16),
    6: np.dtype(np.int32),
    7: np.dtype(np.int64),
    8: np.dtype(object),  # string
    9: np.dtype(np.bool_),
    10: np.dtype(np.float16),
    11: np.dtype(np.float64),
    12: np.dtype(np.uint32),
    13: np.dtype(np.uint64),
    14: np.dtype(np.complex64),
    15: np.dtype(np.complex128),
}
if _ml is not None:  # pragma: no cover
    for _code, _name in ((16, "bfloat16"), (17, "float8_e4m3fn"),
                         (18, "float8_e4m3fnuz"), (19, "float8_e5m2"),
                         (20, "float8_e5m2fnuz"), (21, "uint4"),
                         (22, "int4")):
        if hasattr(_ml, _name):
            _NUMPY[_code] = np.dtype(getattr(_ml, _name))
DTYPE_STRING = 8


def dtype_name(code):
    """ONNX name of a wm_dtype_t ("float", "int64")."""
    return lib.wm_dtype_name(code).decode()


def numpy_dtype(code, what):
    """The numpy dtype of wm_dtype_t |code|; Unimplemented when numpy has
    none (bfloat16 and the float8 types without ml_dtypes)."""
    dt = _NUMPY.get(code)
    if dt is None:
        raise Unimplemented(
            "%s is %s, which has no numpy dtype here (install ml_dtypes for "
            "bfloat16 and the float8 types)" % (what, dtype_name(code)))
    return dt


def dtype_code(dt):
    """The wm_dtype_t of numpy dtype |dt|, or None."""
    dt = np.dtype(dt)
    if dt.kind in "USO":
        return DTYPE_STRING
    dt = dt.newbyteorder("=")
    for code, known in _NUMPY.items():
        if known == dt:
            return code
    return None


def make_shape(dims):
    shape = _capi.Shape()
    shape.rank = len(dims)
    for i, d in enumerate(dims):
        shape.dims[i] = int(d)
    return shape


class Wrapped:
    """One input tensor header over a numpy array (kept alive with it)."""

    def __init__(self, array, code):
        self.array = array
        self.ptr = ctypes.POINTER(_capi.Tensor)()
        shape = make_shape(array.shape)
        if code == DTYPE_STRING:
            check(lib.wm_tensor_create(code, ctypes.byref(shape),
                                       ctypes.byref(self.ptr)))
            for i, s in enumerate(array.reshape(-1)):
                if isinstance(s, str):
                    s = s.encode("utf-8", "surrogateescape")
                elif not isinstance(s, bytes):
                    s = str(s).encode()
                check(lib.wm_tensor_set_string(self.ptr, i, s, len(s)))
        else:
            check(lib.wm_tensor_wrap(code, ctypes.byref(shape),
                                     array.ctypes.data_as(ctypes.c_void_p),
                                     ctypes.byref(self.ptr)))

    def close(self):
        if self.ptr:
            lib.wm_tensor_destroy(self.ptr)
            self.ptr = ctypes.POINTER(_capi.Tensor)()

    def __del__(self):
        self.close()


def prepare_array(value, code, what):
    """The array an input |value| binds as: of wm_dtype_t |code|, C-ordered
    and native-endian (a copy only where the given one is not)."""
    want = numpy_dtype(code, what)
    if not isinstance(value, np.ndarray):
        try:
            value = np.asarray(value, dtype=want if code != DTYPE_STRING
                               else object)
        except (TypeError, ValueError) as e:
            raise InvalidArgument(
                "%s wants %s values, got %s: %s"
                % (what, dtype_name(code), type(value).__name__, e)) from None
    if code == DTYPE_STRING:
        if value.dtype.kind not in "USO":
            raise InvalidArgument(
                "%s wants tensor(string), got a %s array"
                % (what, value.dtype))
        return value
    got = value.dtype
    if got.newbyteorder("=") != want.newbyteorder("=") or \
            (got.kind != want.kind):
        raise InvalidArgument(
            "%s wants tensor(%s) (numpy %s), got a numpy %s array; convert "
            "it with .astype(numpy.%s)"
            % (what, dtype_name(code), want, got, want.name))
    if not got.isnative:
        value = value.astype(want)
    if not value.flags.c_contiguous:
        value = np.ascontiguousarray(value)
    return value


class _Owned:
    """Owns one wm_tensor_t; numpy arrays view its data through the array
    interface and keep this object as their base, so the tensor is freed
    when the last view goes."""

    def __init__(self, ptr, dtype):
        self._ptr = ptr
        t = ptr.contents
        dims = tuple(int(t.shape.dims[i]) for i in range(t.shape.rank))
        self.__array_interface__ = {
            "version": 3,
            "shape": dims,
            "typestr": dtype.str,
            "descr": dtype.descr,
            "data": (t.data or 0, False),
        }

    def __del__(self):
        if self._ptr:
            lib.wm_tensor_destroy(self._ptr)
            self._ptr = None


def tensor_to_numpy(ptr, what):
    """Takes the wm_tensor_t *|ptr| (freed here or by the array's
    finalizer) and returns it as a numpy array."""
    t = ptr.contents
    dims = tuple(int(t.shape.dims[i]) for i in range(t.shape.rank))
    try:
        dt = numpy_dtype(t.dtype, what)
    except Exception:
        lib.wm_tensor_destroy(ptr)
        raise
    if t.dtype == DTYPE_STRING:
        strings = ctypes.cast(t.data, ctypes.POINTER(ctypes.c_char_p))
        out = np.empty(t.count, dtype=object)
        for i in range(t.count):
            out[i] = (strings[i] or b"").decode("utf-8", "surrogateescape")
        lib.wm_tensor_destroy(ptr)
        return out.reshape(dims)
    if t.count == 0 or not t.data:
        lib.wm_tensor_destroy(ptr)
        return np.zeros(dims, dtype=dt)
    return np.asarray(_Owned(ptr, dt))


def item_to_python(item, what):
    """Takes what the wm_item_t |item| holds: a tensor becomes a numpy
    array (zero-copy), a sequence a list, an optional None or its value.
    The item is cleared."""
    try:
        if item.kind == _capi.TYPE_TENSOR:
            # A pointer field read from a struct shares its bytes: copy
            # the address before clearing the field.
            addr = ctypes.cast(item.tensor, ctypes.c_void_p).value
            item.tensor = ctypes.POINTER(_capi.Tensor)()
            if not addr:
                return None
            return tensor_to_numpy(
                ctypes.cast(addr, ctypes.POINTER(_capi.Tensor)), what)
        if item.kind == _capi.TYPE_SEQUENCE:
            return [item_to_python(item.elems[i], "%s[%d]" % (what, i))
                    for i in range(item.count)]
        if item.kind == _capi.TYPE_OPTIONAL:
            if item.count == 0:
                return None
            return item_to_python(item.elems[0], what)
        raise Unimplemented("%s is of a kind (%d) the package does not "
                            "convert" % (what, item.kind))
    finally:
        lib.wm_item_deinit(ctypes.byref(item))


class InputItems:
    """The wm_item_t values of one run's inputs, with what they point to
    kept alive until close()."""

    def __init__(self):
        self.keep = []
        self.wrapped = []

    def tensor(self, array, code):
        w = Wrapped(array, code)
        self.wrapped.append(w)
        item = _capi.Item()
        item.kind = _capi.TYPE_TENSOR
        item.tensor = w.ptr
        return item

    def items(self, elems, kind, elem_kind, elem_dtype):
        item = _capi.Item()
        item.kind = kind
        item.elem_kind = elem_kind
        item.elem_dtype = elem_dtype
        if elems:
            arr = (_capi.Item * len(elems))(*elems)
            self.keep.append(arr)
            item.elems = ctypes.cast(arr, ctypes.POINTER(_capi.Item))
        item.count = len(elems)
        return item

    def close(self):
        for w in self.wrapped:
            w.close()
        self.wrapped = []
        self.keep = []
