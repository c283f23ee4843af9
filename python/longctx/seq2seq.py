"""longctx's encoder-decoder (seq2seq) checkpoints in Python: Model.load(path) returns a Seq2SeqModel for a
checkpoint of model "seq2seq" (written by `longctx train --task seq2seq`), whose generate(source) is the
greedy output of the C model (lc_seq2seq_generate_one). See docs/seq2seq.md."""

import ctypes

from ._family import HandleModel, with_protos
from ._lib import c_int_p, call

_V, _I = ctypes.c_void_p, ctypes.c_int

# the calls this module uses (include/longctx/seq2seq.h), prototyped on first use
_PROTOS = {
    "lc_seq2seq_load": (_I, [ctypes.c_char_p, _I, ctypes.POINTER(_V), _V]),
    "lc_seq2seq_free": (None, [_V]),
    "lc_seq2seq_max_lengths": (None, [_V, c_int_p, c_int_p]),
    "lc_seq2seq_generate_one": (_I, [_V, ctypes.c_char_p, _I, ctypes.c_char_p, c_int_p]),
    "lc_seq2seq_num_params": (ctypes.c_size_t, [_V]),
    "lc_seq2seq_steps_done": (ctypes.c_long, [_V]),
    "lc_seq2seq_set_threads": (_I, [_V, _I]),
}
_L = with_protos(_PROTOS)


class Seq2SeqModel(HandleModel):
    """A trained encoder-decoder over bytes. m.generate("abc") -> the greedy target as str. One model must not
    be used by two threads at once (calls release the GIL)."""

    family = "seq2seq"
    _free, _closed_message = "lc_seq2seq_free", "this longctx seq2seq model is closed"

    def __init__(self, handle):
        HandleModel.__init__(self, handle)
        src, tgt = ctypes.c_int(), ctypes.c_int()
        _L().lc_seq2seq_max_lengths(self._h, ctypes.byref(src), ctypes.byref(tgt))
        self.max_src_len, self.max_tgt_len = src.value, tgt.value

    @classmethod
    def load(cls, path, threads=None):
        """The model of a seq2seq checkpoint (lc_seq2seq_load; an export without optimizer state loads too)."""
        from .model import _path  # the one check of path arguments

        cpath = _path(path)
        _L()
        h = ctypes.c_void_p()
        call("lc_seq2seq_load", cpath, 1, ctypes.byref(h), None)
        m = cls(h.value)
        if threads is not None:
            m.set_threads(threads)
        return m

    @property
    def num_params(self):
        return int(_L().lc_seq2seq_num_params(self._h))

    @property
    def step(self):
        """Optimizer steps the checkpoint had done."""
        return int(_L().lc_seq2seq_steps_done(self._h))

    def set_threads(self, n):
        call("lc_seq2seq_set_threads", self._h, int(n))

    def generate_bytes(self, source):
        """The greedy output (bytes) for source (bytes, or str as UTF-8) of at most max_src_len bytes."""
        data = source.encode("utf-8") if isinstance(source, str) else bytes(source)
        out = ctypes.create_string_buffer(max(self.max_tgt_len, 1))
        n = ctypes.c_int()
        call("lc_seq2seq_generate_one", self._h, data, len(data), out, ctypes.byref(n))
        return out.raw[: n.value]

    def generate(self, source):
        """The greedy output for source as str (UTF-8; bytes that do not decode become U+FFFD)."""
        return self.generate_bytes(source).decode("utf-8", "replace")

    def __repr__(self):
        state = "closed" if self.closed else "%d params, step %d" % (self.num_params, self.step)
        return "<longctx seq2seq model: %s>" % state
