"""longctx: long-context byte-level Transformers (Transformer-XL, sparse and efficient attention kinds)
trained and run on the CPU by the C library liblongctx, bound through ctypes.

    import longctx
    m = longctx.Model.load("model.ckpt")
    logits = m.logits([[72, 105]])           # float32 [1, 2, 256]
    print("".join(m.generate("ROMEO:", 200, seed=1)))

The shared library is found through $LONGCTX_LIB, then next to this package, then the build tree
(build/release/liblongctx.so), then the system (ctypes.util.find_library). Calls release the GIL.
See docs/guides/python.md.
"""

import ctypes

from ._lib import ExportInfo, call, library_path
from .errors import (ArgumentError, FormatError, IOFailure, LongctxError, NumericError, OutOfMemory)
from .classify import Classifier
from . import family  # longctx.family: the library's table of model families, any family's model
from .model import MASK_TOKEN, VOCAB, Model, _path

__version__ = "0.1.0"

__all__ = [
    "Model", "Classifier", "LongctxError", "ArgumentError", "IOFailure", "FormatError", "OutOfMemory", "NumericError",
    "library_path", "load", "create", "export", "VOCAB", "MASK_TOKEN", "__version__",
]


def load(path, **kw):
    """Model.load(path, **kw)."""
    return Model.load(path, **kw)


def create(config=None, **kw):
    """Model.create(config, **kw)."""
    return Model.create(config, **kw)


def export(src, dst):
    """Write checkpoint src (any kind) to dst without its AdamW moments (lc_checkpoint_export; a third of the
    size, loads wherever src does, with zero moments). Returns {"tensors", "dropped", "bytes_in", "bytes_out"}."""
    info = ExportInfo()
    call("lc_checkpoint_export", _path(src, "src"), _path(dst, "dst"), ctypes.byref(info))
    return {k: getattr(info, k) for k, _ in ExportInfo._fields_}
