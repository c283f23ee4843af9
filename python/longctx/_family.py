"""What the model families' Python classes share (seq2seq.py, hibert.py): the library with a module's own
prototypes set on first use, and a model class holding one C handle, freed by the family's free call when the
object lets go of it (close(), `with`, garbage collection)."""

import ctypes

import numpy as np

from . import _lib
from .errors import ArgumentError


# lc_value_kind
INT, FLOAT, BOOL, STRING = 0, 1, 2, 3


def from_text(text, kind):
    """A value the C library wrote as text, as the Python value of its lc_value_kind."""
    if kind == INT:
        return int(text)
    if kind == FLOAT:  # a float32 field: its shortest repr (0.002, not 0.00200000009)
        return float(str(np.float32(text)))
    if kind == BOOL:
        return text == "1"
    return text


def with_protos(protos):
    """A function returning the library with protos ({name: (restype, argtypes)}) set on its first call; a
    name the library lacks raises AttributeError (a library older than the package)."""
    ready = []

    def get():
        L = _lib.lib()
        if not ready:
            for name, (res, args) in protos.items():
                fn = getattr(L, name)
                fn.restype, fn.argtypes = res, args
            ready.append(True)
        return L

    return get


class _Handle(object):
    """A C handle, freed by the C call named free_name when its holder lets go of it."""

    def __init__(self, handle, free_name):
        self.handle = ctypes.c_void_p(handle)
        self.free_name = free_name

    def __del__(self):
        if _lib._lib is not None and self.handle.value:
            getattr(_lib._lib, self.free_name)(self.handle)
            self.handle = ctypes.c_void_p(None)


class HandleModel(object):
    """A model of one C handle. A subclass names its C free call (_free) and the message of calls once it is
    closed (_closed_message)."""

    _free = None
    _closed_message = "this longctx model is closed"

    def __init__(self, handle):
        self._owner = _Handle(handle, self._free)

    def close(self):
        """Free the C model now (also `with`); later calls raise ArgumentError."""
        self.__dict__["_owner"] = None

    @property
    def closed(self):
        return self.__dict__.get("_owner") is None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
        return False

    def _live(self):
        owner = self.__dict__.get("_owner")
        if owner is None:
            raise ArgumentError(1, self._closed_message)
        return owner

    @property
    def _h(self):
        return self._live().handle
