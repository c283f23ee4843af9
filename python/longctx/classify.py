"""longctx.Classifier: a sequence classifier of the C library (train --task classify, docs/guides/classify.md) loaded
from its checkpoint, predicting the labels of texts. longctx.Model.load returns one for a checkpoint whose
metadata says model = classify."""

import ctypes

import numpy as np

from ._family import with_protos
from ._lib import call
from .errors import ArgumentError
from .model import Model

_V = ctypes.c_void_p
_I = ctypes.c_int
_S = ctypes.c_char_p

# name: (restype, argtypes) of the calls of include/longctx/flat.h this module uses
_PROTOS = {
    "lc_text_classifier_load": (_I, [_S, _I, ctypes.POINTER(_V)]),
    "lc_text_classifier_free": (None, [_V]),
    "lc_text_classifier_model": (_V, [_V]),
    "lc_text_classifier_classes": (_I, [_V]),
    "lc_text_classifier_label": (_S, [_V, _I]),
    "lc_text_classifier_predict": (_I, [_V, ctypes.c_long, ctypes.POINTER(_S), ctypes.POINTER(ctypes.c_size_t),
                                        ctypes.POINTER(_I), ctypes.POINTER(ctypes.c_double)]),
    "lc_classifier_set_threads": (_I, [_V, _I]),
    "lc_classifier_num_params": (ctypes.c_size_t, [_V]),
    "lc_classifier_steps_done": (ctypes.c_long, [_V]),
}
_lib = with_protos(_PROTOS)


def _texts(texts):
    """A list of str (UTF-8) or bytes as C arrays of pointers and lengths (the Python objects kept alive)."""
    if isinstance(texts, (str, bytes)):
        raise TypeError("texts must be a list of str or bytes, not one %s" % type(texts).__name__)
    data = []
    for i, t in enumerate(texts):
        if isinstance(t, str):
            t = t.encode("utf-8")
        elif not isinstance(t, (bytes, bytearray)):
            raise TypeError("texts[%d] must be str or bytes, got %s" % (i, type(t).__name__))
        data.append(bytes(t))
    n = len(data)
    ptrs = (_S * max(n, 1))(*data)
    lens = (ctypes.c_size_t * max(n, 1))(*[len(t) for t in data])
    return n, ptrs, lens, data


class Classifier:
    """A classifier checkpoint's model: m.predict(texts) -> labels, m.predict_proba(texts) -> one dict
    {label: probability} per text, m.labels (the class names, in the model's order). Texts are str (encoded
    as UTF-8) or bytes, tokenized as the model was trained (bytes or words). Calls release the GIL; one
    Classifier must not be used by two threads at once."""

    family = "classify"

    def __init__(self, handle):
        self._h = handle
        L = _lib()
        self.labels = [L.lc_text_classifier_label(handle, i).decode("utf-8", "replace")
                       for i in range(L.lc_text_classifier_classes(handle))]

    @classmethod
    def load(cls, cpath, max_batch=0, threads=None):
        """The classifier of checkpoint cpath (bytes, as longctx.model._path returns it); max_batch: texts
        per forward pass (0: 16, as `longctx predict`)."""
        h = ctypes.c_void_p()
        call("lc_text_classifier_load", cpath, int(max_batch), ctypes.byref(h))
        m = cls(h.value)
        if threads is not None:
            m.set_threads(threads)
        return m

    def close(self):
        h, self._h = getattr(self, "_h", None), None
        if h:
            _lib().lc_text_classifier_free(h)

    # close() on garbage collection and at the end of a `with` block, as longctx.Model
    __del__, __enter__, __exit__ = Model.__del__, Model.__enter__, Model.__exit__

    def _live(self):
        if not self._h:
            raise ArgumentError(1, "this longctx classifier is closed")
        return self._h

    @property
    def _model(self):
        return _lib().lc_text_classifier_model(self._live())

    def set_threads(self, n):
        call("lc_classifier_set_threads", self._model, int(n))

    @property
    def num_params(self):
        return int(_lib().lc_classifier_num_params(self._model))

    @property
    def step(self):
        return int(_lib().lc_classifier_steps_done(self._model))

    def _predict(self, texts, probs):
        n, ptrs, lens, keep = _texts(texts)
        pred = np.zeros(max(n, 1), dtype=np.int32)
        p = np.zeros((max(n, 1), len(self.labels)), dtype=np.float64) if probs else None
        call("lc_text_classifier_predict", self._live(), n, ptrs, lens,
             pred.ctypes.data_as(ctypes.POINTER(ctypes.c_int)),
             p.ctypes.data_as(ctypes.POINTER(ctypes.c_double)) if probs else None)
        del keep
        return pred[:n], (p[:n] if probs else None)

    def predict(self, texts):
        """The predicted label (a str of m.labels) of each text."""
        pred, _ = self._predict(texts, False)
        return [self.labels[k] for k in pred]

    def predict_proba(self, texts):
        """Each text's class probabilities as a dict {label: probability} in m.labels' order (the softmax of
        its logits: `longctx predict --probs`)."""
        _, p = self._predict(texts, True)
        return [dict(zip(self.labels, (float(v) for v in row))) for row in p]

    def __repr__(self):
        if not self._h:
            return "<longctx.Classifier (closed)>"
        return "<longctx.Classifier %d classes, %d params, step %d>" % (len(self.labels), self.num_params, self.step)
