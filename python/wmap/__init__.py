"""wmap: a portable AI runtime and its workload map, from Python.

    import numpy as np, wmap
    sess = wmap.InferenceSession("model.onnx", backends=["cpu"], threads=2)
    (y,) = sess.run(None, {"input": np.zeros((1, 3, 224, 224), np.float32)})
    wmap.map("model.onnx")["totals"]["flops"]

Over libwmap through ctypes (see wmap._capi for where the library is
looked for); numpy is the only dependency.
"""

from ._version import __version__
from ._capi import LIBRARY_ORIGIN as library_origin
from ._capi import LIBRARY_PATH as library_path
from ._core import backends
from .errors import (Cancelled, CommandFailed, DataLoss, Error,
                     FailedPrecondition, Incompatible, Internal,
                     InvalidArgument, NotFound, OutOfRange, ResourceExhausted,
                     Unavailable, Unimplemented)
from .session import InferenceSession, NodeArg, load_tensor, save_tensor
from .tools import bench, cli_path, compare, conform, map, zoo, zoo_export, \
    zoo_models

__all__ = [
    "__version__", "library_path", "library_origin", "InferenceSession",
    "NodeArg", "load_tensor", "save_tensor", "map", "bench", "compare",
    "conform", "zoo", "zoo_export", "zoo_models", "backends", "cli_path",
    "Error", "InvalidArgument", "NotFound", "OutOfRange", "Unimplemented",
    "ResourceExhausted", "FailedPrecondition", "Incompatible", "Unavailable",
    "DataLoss", "Internal", "Cancelled", "CommandFailed",
]
