"""HIBERT checkpoints (`longctx hibert finetune`): Model.load(path) returns a Summarizer, which summarizes texts
as `longctx summarize --method hibert` does files (docs/guides/summarize.md, docs/reference/hibert.md)."""

import ctypes

import numpy as np

from ._family import HandleModel, with_protos
from ._lib import c_int_p, call

_V, _I, _S = ctypes.c_void_p, ctypes.c_int, ctypes.c_char_p

# the calls this module uses (include/longctx/flat.h and hibert.h), prototyped on first use
_PROTOS = {
    "lc_hibert_summarizer_load": (_I, [_S, ctypes.POINTER(_V)]),
    "lc_hibert_summarizer_free": (None, [_V]),
    "lc_hibert_summarizer_model": (_V, [_V]),
    "lc_hibert_summarizer_intruder_head": (_I, [_V]),
    "lc_hibert_summarizer_score": (_I, [_V, _S, _I, c_int_p]),
    "lc_hibert_summarizer_sentence": (_S, [_V, _I]),
    "lc_hibert_summarizer_scores": (ctypes.POINTER(ctypes.c_float), [_V]),
    "lc_hibert_summarizer_pick": (_I, [_V, _I, ctypes.POINTER(ctypes.c_uint8)]),
    "lc_hibert_set_threads": (_I, [_V, _I]),
    "lc_hibert_num_params": (ctypes.c_size_t, [_V]),
    "lc_hibert_steps_done": (ctypes.c_long, [_V]),
}
_L = with_protos(_PROTOS)
_TITLE = {None: -1, False: 0, True: 1}


class Summarizer(HandleModel):
    """A HIBERT checkpoint's extractive summarizer (lc_hibert_summarizer of include/longctx/flat.h). Texts are
    str (or UTF-8 bytes) of at least 2 sentences by the sentence rule (docs/results/summarization-protocol.md;
    fewer raise FormatError). title: None applies the command's BBC rule (a first line without a sentence end,
    then a blank line, is a title, not summarized); True: line 1 is a title (--title); False: text (--no-title).
    m.intruder_head: True for a pre-training checkpoint with --intruders, scored by its intruder head; one
    without intruders has no trained head (Model.load raises ArgumentError naming the file). Calls release the
    GIL; one Summarizer must not be used by two threads at once."""

    family = "hibert"
    _free, _closed_message = "lc_hibert_summarizer_free", "this longctx HIBERT summarizer is closed"

    def __init__(self, handle):
        HandleModel.__init__(self, handle)
        self.intruder_head = bool(_L().lc_hibert_summarizer_intruder_head(handle))

    @classmethod
    def load(cls, path, threads=None):
        # lc_hibert_summarizer_load
        from .model import _path  # the one check of path arguments

        cpath = _path(path)
        _L()
        h = ctypes.c_void_p()
        call("lc_hibert_summarizer_load", cpath, ctypes.byref(h))
        m = cls(h.value)
        if threads is not None:
            m.set_threads(threads)
        return m

    @property
    def _model(self):
        return _L().lc_hibert_summarizer_model(self._h)

    @property
    def num_params(self):
        return int(_L().lc_hibert_num_params(self._model))

    @property
    def step(self):  # optimizer steps the checkpoint had done
        return int(_L().lc_hibert_steps_done(self._model))

    def set_threads(self, n):
        call("lc_hibert_set_threads", self._model, int(n))

    def _score(self, text, title):
        """Score text's sentences in C; the number of sentences."""
        from .model import _cstr

        if title not in _TITLE:
            raise TypeError("title must be None, True or False, got %r" % (title,))
        if not isinstance(text, (str, bytes, bytearray)):
            raise TypeError("text must be a str or bytes, got %s" % type(text).__name__)
        n = ctypes.c_int()
        call("lc_hibert_summarizer_score", self._h, _cstr(text, "text"), _TITLE[title], ctypes.byref(n))
        return n.value

    def _sentences(self, n):
        L = _L()
        return [L.lc_hibert_summarizer_sentence(self._h, i).decode("utf-8", "replace") for i in range(n)]

    def sentence_scores(self, text, title=None):
        """Every sentence of text with its score, a list of (sentence, score) in document order: the float32
        logits `longctx summarize --scores` prints (higher: more likely picked)."""
        n = self._score(text, title)
        scores = np.ctypeslib.as_array(_L().lc_hibert_summarizer_scores(self._h), shape=(n,)).copy()
        return list(zip(self._sentences(n), (float(s) for s in scores)))

    def summarize(self, text, sentences=3, title=None):
        """The `sentences` best-scored sentences of text (all when it has fewer; ties: the earlier) as a list
        of str in document order: the line `longctx summarize --sentences K` prints, split."""
        from .model import _int

        k = _int(sentences, "sentences")
        n = self._score(text, title)
        pick = (ctypes.c_uint8 * n)()
        call("lc_hibert_summarizer_pick", self._h, max(min(k, n), -(2 ** 31)), pick)  # k in C's int range
        return [s for s, p in zip(self._sentences(n), pick) if p]

    def __repr__(self):
        if self.closed:
            return "<longctx HIBERT summarizer (closed)>"
        return "<longctx HIBERT summarizer: %d params, step %d%s>" % (
            self.num_params, self.step, ", intruder head" if self.intruder_head else "")
