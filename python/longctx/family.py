"""Model families by name (include/longctx/family.h): the library's table of families (the built-in "lm",
"classify", "hibert", "seq2seq", and any registered at run time by a shared object loaded into the process),
each family's config fields as its field table describes them, and FamilyModel: a checkpoint of any family
loaded through the table by its metadata "model", with its config read and its run fields set by name.
Model.load returns a FamilyModel for a family the package has no class of its own for."""

import ctypes
import os

from ._family import HandleModel, from_text, with_protos
from ._lib import check

_V, _I, _S = ctypes.c_void_p, ctypes.c_int, ctypes.c_char_p
_SP = ctypes.POINTER(ctypes.c_char_p)

_PROTOS = {
    "lc_family_name": (_S, [_I]),
    "lc_family_field_count": (_I, [_S]),
    "lc_family_field_about": (_I, [_S, _I, _SP, ctypes.POINTER(_I), _SP, _SP, _SP, ctypes.c_char_p, ctypes.c_size_t]),
    "lc_family_model_load": (_I, [_S, ctypes.POINTER(_V)]),
    "lc_family_model_free": (None, [_V]),
    "lc_family_model_family": (_S, [_V]),
    "lc_family_model_get": (_I, [_V, _S, ctypes.c_char_p, ctypes.c_size_t]),
    "lc_family_model_set": (_I, [_V, _S, _S]),
    "lc_family_model_save": (_I, [_V, _S]),
    "lc_family_model_evaluate": (_I, [_V, _S, _SP, ctypes.POINTER(ctypes.c_double), _I, ctypes.POINTER(_I)]),
}
_L = with_protos(_PROTOS)


def _text(b):
    return b.decode("utf-8", "replace") if b is not None else None


def families():
    """The names of the library's families, in table order: ["lm", "classify", "hibert", "seq2seq", ...]."""
    L, out, i = _L(), [], 0
    while True:
        name = L.lc_family_name(i)
        if name is None:
            return out
        out.append(name.decode())
        i += 1


def fields(family):
    """The config fields of a family: a list of dicts with name (the checkpoint key), kind ("int", "float",
    "bool", "str"), flag (the CLI flag or None), choices (the value names or None), help and default."""
    L = _L()
    n = L.lc_family_field_count(family.encode())
    if n < 0:
        raise KeyError("no model family %r (families: %s)" % (family, ", ".join(families())))
    out = []
    for i in range(n):
        name, flag, choices, help_ = _S(), _S(), _S(), _S()
        kind = _I()
        buf = ctypes.create_string_buffer(1024)
        check(L.lc_family_field_about(family.encode(), i, ctypes.byref(name), ctypes.byref(kind), ctypes.byref(flag),
                                      ctypes.byref(choices), ctypes.byref(help_), buf, len(buf)))
        out.append({"name": _text(name.value), "kind": ("int", "float", "bool", "str")[kind.value],
                    "flag": _text(flag.value), "choices": _text(choices.value).split("|") if choices.value else None,
                    "help": _text(help_.value), "default": from_text(_text(buf.value), kind.value)})
    return out


class FamilyModel(HandleModel):
    """A checkpoint of any family, loaded through the library's family table. .family names the family;
    .config is its config as a dict (from the family's field table); set(key, value) changes a run field
    (a shape field raises ArgumentError); evaluate(path) gives its metrics; save(path) writes it."""

    _free, _closed_message = "lc_family_model_free", "this longctx model is closed"

    def __init__(self, handle):
        HandleModel.__init__(self, handle)
        self.family = _L().lc_family_model_family(self._h).decode()
        self._fields = fields(self.family)

    @classmethod
    def load(cls, path):
        h = _V()
        check(_L().lc_family_model_load(path, ctypes.byref(h)))
        return cls(h.value)

    def get(self, key):
        """One config field by name (or its CLI flag's name) as its Python value."""
        buf = ctypes.create_string_buffer(1024)
        check(_L().lc_family_model_get(self._h, key.encode(), buf, len(buf)))
        norm = key.lstrip("-").replace("-", "_")
        kind = [f["kind"] for f in self._fields
                if norm in (f["name"], (f["flag"] or "").lstrip("-").replace("-", "_"))][0]
        return from_text(buf.value.decode("utf-8", "replace"), ("int", "float", "bool", "str").index(kind))

    def set(self, key, value):
        """Set a run field (its checkpoint key or flag name) from value (converted to text)."""
        if isinstance(value, bool):
            value = int(value)
        check(_L().lc_family_model_set(self._h, key.encode(), str(value).encode()))

    @property
    def config(self):
        return {f["name"]: self.get(f["name"]) for f in self._fields}

    def evaluate(self, path):
        """The family's metrics on the data at path, as a dict ({"accuracy": 0.97}); ArgumentError for a family
        evaluated by its command only."""
        names, values, n = (_S * 8)(), (ctypes.c_double * 8)(), _I()
        check(_L().lc_family_model_evaluate(self._h, os.fsencode(path), names, values, 8, ctypes.byref(n)))
        return {names[i].decode(): values[i] for i in range(n.value)}

    def save(self, path):
        """Write the model's checkpoint (its family's save)."""
        check(_L().lc_family_model_save(self._h, os.fsencode(path)))

    def __repr__(self):
        return "longctx.FamilyModel(family=%r)" % self.family
