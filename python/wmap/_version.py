"""The package's version: libwmap's, which the ctypes mirrors follow."""

__version__ = "0.1.0"
