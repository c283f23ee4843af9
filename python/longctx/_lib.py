"""Finding and loading liblongctx.so, and the ctypes prototypes of the calls the package uses.

The library is loaded with ctypes.CDLL (never PyDLL): ctypes releases the GIL for the duration of every
foreign call made through a CDLL, so other Python threads run while a forward pass, an evaluation or a
training run is in C. Only the calls of include/longctx/flat.h and a few of longctx.h are used; no C
struct is mirrored here (models, configurations and options are opaque pointers).
"""

import ctypes
import ctypes.util
import os
import threading

from .errors import LongctxError, error_for

_ENV = "LONGCTX_LIB"
_NAMES = ("liblongctx.so",)

_lock = threading.Lock()
_lib = None
_path = None


def candidates():
    """The places searched for the library, in order: (description, path or None)."""
    out = []
    env = os.environ.get(_ENV)
    if env:
        out.append(("$" + _ENV, env))
    here = os.path.dirname(os.path.abspath(__file__))
    for name in _NAMES:
        out.append(("next to the package", os.path.join(here, name)))
    repo = os.path.dirname(os.path.dirname(here))  # python/longctx -> python -> repository root
    for name in _NAMES:
        out.append(("the build tree", os.path.join(repo, "build", "release", name)))
    found = ctypes.util.find_library("longctx")
    out.append(("the system (ctypes.util.find_library)", found))
    return out


def _locate():
    env = os.environ.get(_ENV)
    if env:  # an explicit choice is the only one tried
        if not os.path.isfile(env):
            raise LongctxError(0, "%s=%s: no such file (unset it to search the usual places)" % (_ENV, env))
        return env
    tried = []
    for where, path in candidates():
        if path is None:
            tried.append("%s: not found" % where)
            continue
        if where.startswith("the system") or os.path.isfile(path):
            return path
        tried.append("%s: %s" % (where, path))
    raise LongctxError(
        0,
        "liblongctx.so not found; build it (make, which writes build/release/liblongctx.so), install it "
        "(make install), or set %s to its path. Looked in: %s" % (_ENV, "; ".join(tried)),
    )


c_int_p = ctypes.POINTER(ctypes.c_int)
c_long_p = ctypes.POINTER(ctypes.c_long)
c_double_p = ctypes.POINTER(ctypes.c_double)
c_float_p = ctypes.POINTER(ctypes.c_float)
c_char_pp = ctypes.POINTER(ctypes.c_char_p)

# lc_train_callback: int (*)(const double *values, int n, void *user)
TRAIN_CALLBACK = ctypes.CFUNCTYPE(ctypes.c_int, c_double_p, ctypes.c_int, ctypes.c_void_p)

_V = ctypes.c_void_p
_I = ctypes.c_int
_S = ctypes.c_char_p
_Z = ctypes.c_size_t

# name: (restype, argtypes). restype _I for lc_status calls (checked by call()).
_PROTOS = {
    "lc_last_error": (_S, []),
    "lc_status_name": (_S, [_I]),
    # configuration
    "lc_config_new": (_V, []),
    "lc_config_free": (None, [_V]),
    "lc_config_preset": (_I, [_V, _S]),
    "lc_config_validate": (_I, [_V]),
    "lc_config_key": (_S, [_I, c_int_p]),
    "lc_config_set_str": (_I, [_V, _S, _S]),
    "lc_config_get_str": (_I, [_V, _S, ctypes.c_char_p, _Z]),
    "lc_config_key_index": (_I, [_S]),
    "lc_config_key_about": (_I, [_I, c_char_pp, c_char_pp, c_char_pp, c_int_p]),
    "lc_config_derive": (_I, [_V, ctypes.c_uint64]),
    # training options
    "lc_train_options_new": (_V, []),
    "lc_train_options_free": (None, [_V]),
    "lc_train_options_key": (_S, [_I, c_int_p]),
    "lc_train_options_set_str": (_I, [_V, _S, _S]),
    "lc_train_options_get_str": (_I, [_V, _S, ctypes.c_char_p, _Z]),
    # model
    "lc_model_create": (_I, [_V, _I, ctypes.c_uint64, ctypes.POINTER(_V)]),
    "lc_model_free": (None, [_V]),
    "lc_model_config": (_V, [_V]),
    "lc_model_num_params": (_Z, [_V]),
    "lc_model_set_threads": (_I, [_V, _I]),
    "lc_model_threads": (_I, [_V]),
    "lc_model_resize": (_I, [_V, _I, _I, _I]),
    "lc_model_reset_memory": (None, [_V]),
    "lc_model_memory_rows": (_I, [_V]),
    "lc_model_step": (ctypes.c_long, [_V]),
    "lc_model_capacity": (None, [_V, c_int_p, c_int_p, c_int_p]),
    "lc_model_tensor_count": (_I, [_V]),
    "lc_model_tensor_info": (_I, [_V, _I, c_char_pp, c_int_p, c_long_p, c_int_p]),
    "lc_model_tensor_data": (c_float_p, [_V, _I, _I]),
    "lc_model_forward_logits": (_I, [_V, c_int_p, _I, _I, c_float_p]),
    "lc_generator_new": (_I, [_V, ctypes.c_char_p, _Z, ctypes.c_float, _I, ctypes.c_uint64, ctypes.POINTER(_V)]),
    "lc_generator_next": (_I, [_V, c_int_p]),
    "lc_generator_free": (None, [_V]),
    "lc_evaluate_file": (_I, [_V, _S, _I, _I, _I, _I, c_double_p, c_double_p, c_long_p]),
    "lc_evaluate": (_I, [_V, ctypes.c_char_p, _Z, _I, _I, c_double_p, c_long_p]),
    "lc_evaluate_mlm": (_I, [_V, ctypes.c_char_p, _Z, _I, _I, ctypes.c_uint64, c_double_p, c_double_p, c_long_p]),
    "lc_train_step": (_I, [_V, _V, c_int_p, c_int_p, _I, _I, c_double_p]),
    "lc_train_file": (_I, [_V, _S, _I, _V, TRAIN_CALLBACK, _V]),
    "lc_progress_key": (_S, [_I]),
    # checkpoints
    "lc_checkpoint_load": (_I, [_S, _I, ctypes.POINTER(_V), _V]),
    "lc_checkpoint_save": (_I, [_V, _V, _S]),
    "lc_checkpoint_export": (_I, [_S, _S, ctypes.c_void_p]),
}


class ExportInfo(ctypes.Structure):
    """lc_export_info (include/longctx/train.h)."""
    _fields_ = [("tensors", ctypes.c_int), ("dropped", ctypes.c_int),
                ("bytes_in", ctypes.c_longlong), ("bytes_out", ctypes.c_longlong)]


def lib():
    """The loaded library (loaded on first use)."""
    global _lib, _path
    if _lib is not None:
        return _lib
    with _lock:
        if _lib is None:
            path = _locate()
            try:
                handle = ctypes.CDLL(path)  # CDLL: the GIL is released during every call
            except OSError as e:
                raise LongctxError(0, "cannot load %s: %s" % (path, e)) from None
            missing = []
            for name, (res, args) in _PROTOS.items():
                try:
                    fn = getattr(handle, name)
                except AttributeError:
                    missing.append(name)
                    continue
                fn.restype = res
                fn.argtypes = args
            if missing:
                raise LongctxError(
                    0,
                    "%s lacks %s: it is older than this package (rebuild it, or point %s at a newer one)"
                    % (path, ", ".join(missing), _ENV),
                )
            _path = path
            _lib = handle
    return _lib


def library_path():
    """The path the library was loaded from (loading it first)."""
    lib()
    return _path


def last_error():
    msg = lib().lc_last_error()
    return msg.decode("utf-8", "replace") if msg else ""


def check(status):
    """Raise the exception of a non-zero lc_status, carrying lc_last_error() (read on this thread, right
    after the call: the message is per thread in C, and a ctypes call runs on the calling thread)."""
    if status:
        raise error_for(status, last_error())
    return status


def call(name, *args):
    """Call an lc_status function and raise on failure."""
    return check(getattr(lib(), name)(*args))
