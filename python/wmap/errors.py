"""wmap's exceptions: Error, and one subclass per wm_status_code_t, each
carrying libwmap's message (which names the object and the values)."""


class Error(Exception):
    """A wmap failure: a status from libwmap, or a bad argument.

    Attributes: code (the wm_status_code_t number), code_name ("NOT_FOUND"),
    message (the text, context first)."""

    code = None
    code_name = "UNKNOWN"

    def __init__(self, message):
        super().__init__(message)
        self.message = message

    def __str__(self):
        return self.message


def _make(name, code, code_name, doc, *bases):
    cls = type(name, (Error,) + bases, {
        "__doc__": doc, "code": code, "code_name": code_name,
        "__module__": __name__})
    return cls


InvalidArgument = _make("InvalidArgument", 1, "INVALID_ARGUMENT",
                        "A bad argument: wrong dtype, shape, name or value.",
                        ValueError)
NotFound = _make("NotFound", 2, "NOT_FOUND",
                 "A file, input, output or backend that does not exist.",
                 LookupError)
OutOfRange = _make("OutOfRange", 3, "OUT_OF_RANGE",
                   "A value past the range allowed.", IndexError)
Unimplemented = _make("Unimplemented", 4, "UNIMPLEMENTED",
                      "Something wmap does not do (yet).",
                      NotImplementedError)
ResourceExhausted = _make("ResourceExhausted", 5, "RESOURCE_EXHAUSTED",
                          "Out of memory, or a size too large.", MemoryError)
FailedPrecondition = _make("FailedPrecondition", 6, "FAILED_PRECONDITION",
                           "A call in the wrong state (a node no backend "
                           "takes under strict placement...).")
Incompatible = _make("Incompatible", 7, "INCOMPATIBLE",
                     "Versions or formats that do not go together.")
Unavailable = _make("Unavailable", 8, "UNAVAILABLE",
                    "A device, peer or tool that cannot be reached now.")
DataLoss = _make("DataLoss", 9, "DATA_LOSS",
                 "A malformed or truncated file (ONNX model, tensor, "
                 "baseline).")
Internal = _make("Internal", 10, "INTERNAL", "A bug in wmap.")
Cancelled = _make("Cancelled", 11, "CANCELLED", "A cancelled operation.")


class CommandFailed(Error):
    """The wmap CLI (run for bench and conform) exited with an error.

    Attributes: returncode, stderr (its text), command (the argument
    list)."""

    code_name = "COMMAND_FAILED"

    def __init__(self, message, returncode, stderr, command):
        super().__init__(message)
        self.returncode = returncode
        self.stderr = stderr
        self.command = command


BY_CODE = {cls.code: cls for cls in (
    InvalidArgument, NotFound, OutOfRange, Unimplemented, ResourceExhausted,
    FailedPrecondition, Incompatible, Unavailable, DataLoss, Internal,
    Cancelled)}


def from_status(status, context=None):
    """Turns a non-NULL wm_status_t into the matching exception, freeing
    the status."""
    from ._capi import lib
    code = lib.wm_status_code(status)
    message = lib.wm_status_message(status).decode("utf-8", "replace")
    lib.wm_status_free(status)
    if context:
        message = "%s: %s" % (context, message)
    cls = BY_CODE.get(code, Error)
    err = cls(message)
    if cls is Error:
        err.code = code
    return err


def check(status, context=None):
    """Raises the exception of |status| unless it is NULL (OK)."""
    if status:
        raise from_status(status, context)
