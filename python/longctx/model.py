"""longctx.Model: a byte-level language model of the C library (Transformer-XL or vanilla, any attention
kind), driven from Python through ctypes. See docs/guides/python.md for the whole API."""

import codecs
import ctypes
import errno
import json
import math
import numbers
import os
import struct

import numpy as np

from . import _lib
from ._family import HandleModel, from_text as _from_text
from ._lib import call, check, lib
from .errors import ArgumentError, FormatError, LongctxError

VOCAB = 256
MASK_TOKEN = 256  # the masked-LM mask symbol (models with objective "mlm")

# lc_value_kind
_INT, _FLOAT, _BOOL, _STRING = 0, 1, 2, 3
_SPLITS = {"auto": 0, "enwik8": 1, "nanogpt": 2}
_PARTS = {"train": 0, "valid": 1, "test": 2, "all": 3}
_TENSOR_PART = {"value": 0, "grad": 1, "adam_m": 2, "adam_v": 3}


def _keys(fn):
    out = []
    kind = ctypes.c_int()
    i = 0
    while True:
        name = fn(i, ctypes.byref(kind))
        if name is None:
            return out
        out.append((name.decode(), kind.value))
        i += 1


def _to_text(value):
    if isinstance(value, bool) or isinstance(value, np.bool_):
        return "1" if value else "0"
    if isinstance(value, float):
        return repr(value)
    return str(value)


def _cstr(text, what):
    """text (str) as the bytes of a C string; a NUL inside would cut it short there, so it raises."""
    data = text.encode("utf-8") if isinstance(text, str) else bytes(text)
    if b"\0" in data:
        raise ValueError("%s: embedded null byte" % what)
    return data


def _path(path, what="path"):
    """A path argument (str or os.PathLike) as the bytes C reads; TypeError for other types, ValueError for a
    path holding a NUL (C would read it cut short there)."""
    if isinstance(path, (bytes, bytearray)) or not isinstance(path, (str, os.PathLike)):
        raise TypeError("%s must be a str or os.PathLike, got %s" % (what, type(path).__name__))
    return _cstr(os.fsencode(path), "%s %r" % (what, os.fspath(path)))


def _int(value, what):
    """An int argument (a Python or numpy integer; not a float, str or bool)."""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise TypeError("%s must be an int, got %s" % (what, type(value).__name__))
    return int(value)


def _number(value, what):
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError("%s must be a number, got %s" % (what, type(value).__name__))
    return float(value)


_LM_FAMILIES = ("xl", "vanilla")


def _load_seq2seq(path, threads):
    from .seq2seq import Seq2SeqModel

    return Seq2SeqModel.load(path, threads=threads)


def _load_hibert(path, threads):
    from .hibert import Summarizer

    return Summarizer.load(path, threads=threads)


# Model.load of the other families' checkpoints (metadata "model" -> a loader(path, threads))
_FAMILIES = {"seq2seq": _load_seq2seq, "hibert": _load_hibert}


def _family_of(path):
    """The metadata "model" of a longctx safetensors file, or None when it cannot be read (C says why)."""
    try:
        if not os.path.isfile(path):  # never open a FIFO or device here: C refuses them
            return None
        with open(path, "rb") as f:
            head = f.read(8)
            if len(head) < 8:
                return None
            (n,) = struct.unpack("<Q", head)
            if n > 1 << 26:
                return None
            meta = json.loads(f.read(n).decode("utf-8")).get("__metadata__") or {}
    except (OSError, ValueError, UnicodeDecodeError, AttributeError):
        return None
    return meta.get("model") if meta.get("format") == "longctx" else None


def _read_fields(handle, keys_fn, get_fn):
    buf = ctypes.create_string_buffer(1024)
    out = {}
    for name, kind in _keys(keys_fn):
        check(get_fn(handle, name.encode(), buf, len(buf)))
        out[name] = _from_text(buf.value.decode(), kind)
    return out


def _canonical(key):
    return str(key).lstrip("-").replace("-", "_")


def _config_handle(config):
    """A C configuration built from a dict the way `longctx train` builds one from its flags: the preset
    ("small" unless "preset" is given), then each key, then the CLI's derived values."""
    L = lib()
    config = dict(config or {})
    cfg = L.lc_config_new()
    if not cfg:
        raise MemoryError("out of memory")
    try:
        keys = {_canonical(k): k for k in config}
        preset = config.get(keys.get("preset"), "small") if "preset" in keys else "small"
        call("lc_config_preset", cfg, str(preset).encode())
        given = 0  # bit i: config key i (lc_config_key_index) was given
        for key, value in config.items():
            if _canonical(key) == "preset":
                continue
            call("lc_config_set_str", cfg, _cstr(str(key), "config key"), _cstr(_to_text(value), "config %s" % key))
            given |= 1 << L.lc_config_key_index(_cstr(str(key), "config key"))
        call("lc_config_derive", cfg, given)  # the values longctx train derives (xl's mem_len, ...)
        call("lc_config_validate", cfg)
        return cfg
    except BaseException:
        L.lc_config_free(cfg)
        raise


def _config_fields():
    """The configuration's fields as the C library describes them (lc_config_key, lc_config_key_about): a list
    of dicts with "name" (Model.config's key), "kind" ("int", "float", "bool" or "string"), "flag" (the
    `longctx train` flag that sets it, or None), "choices" (the value names of a choice, or None), "help"
    (the flag's help line, or None) and "xl_only" (Transformer-XL models only)."""
    L = lib()
    kinds = {_INT: "int", _FLOAT: "float", _BOOL: "bool", _STRING: "string"}
    out = []
    for i, (name, kind) in enumerate(_keys(L.lc_config_key)):
        flag, choices, help_, xl = ctypes.c_char_p(), ctypes.c_char_p(), ctypes.c_char_p(), ctypes.c_int()
        call("lc_config_key_about", i, ctypes.byref(flag), ctypes.byref(choices), ctypes.byref(help_),
             ctypes.byref(xl))
        text = [v.value.decode() if v.value is not None else None for v in (flag, choices, help_)]
        out.append({"name": name, "kind": kinds[kind], "flag": text[0],
                    "choices": text[1].split("|") if text[1] else None, "help": text[2], "xl_only": bool(xl.value)})
    return out


class _Handle(object):
    """The C model and its training options, freed when the last holder lets go: the Model (until close()),
    the numpy views of its buffers, an open generate() iterator."""

    def __init__(self, model, options):
        self.model = ctypes.c_void_p(model)
        self.options = ctypes.c_void_p(options)

    def __del__(self):
        L = _lib._lib
        if L is None:
            return
        if self.model.value:
            L.lc_model_free(self.model)
            self.model = ctypes.c_void_p(None)
        if self.options.value:
            L.lc_train_options_free(self.options)
            self.options = ctypes.c_void_p(None)


class _View(object):
    """An __array_interface__ over memory the model owns; numpy arrays made from it keep it alive."""

    def __init__(self, owner, address, shape):
        self._owner = owner
        self.__array_interface__ = {"data": (address, False), "shape": tuple(shape), "typestr": "<f4",
                                    "version": 3}


class Model(HandleModel):
    """A longctx language model. Build one with Model.create(config) or Model.load(path).

    Every method calls into liblongctx through ctypes, which releases the GIL for the duration of the
    call: other Python threads run meanwhile. One model must not be used by two threads at once."""

    _closed_message = "this longctx.Model is closed (close() or __del__ was called)"
    family = "lm"  # the model family (longctx.Classifier: "classify", longctx.seq2seq.Seq2SeqModel: "seq2seq",
    #                longctx.hibert.Summarizer: "hibert")

    def __init__(self, handle, options):
        self._owner = _Handle(handle, options)

    def close(self):
        """Let go of the C model: it is freed now, or when the last array from parameters() (or an open
        generate() iterator) is gone. Any later call on this Model raises ArgumentError. Also `with`."""
        HandleModel.close(self)

    def __del__(self):
        self.close()

    @property
    def _h(self):
        return self._live().model

    @property
    def _opts(self):
        return self._live().options

    # ------------------------------------------------------------ construction
    @classmethod
    def create(cls, config=None, seed=1337, max_batch=16, threads=None):
        """A new model with the training initialisation drawn from `seed`. config: a dict whose keys are
        lc_config's fields (n_layer, d_model, ..., as Model.config returns them) or the CLI's flag names
        (layers, dim, heads, ffn, seg_len / "seg-len", untied, ...), plus "preset" (tiny, small, base;
        default small). Values are as in Model.config (norm "pre"/"post", model "xl"/"vanilla", ...).
        Derived values follow `longctx train`: an xl model's mem_len defaults to seq_len; objective "mlm"
        makes the model vanilla unless "model" is given. max_batch: the largest batch planned for (calls
        with more rows re-plan). An unknown key or bad value raises ArgumentError."""
        L = lib()
        cfg = _config_handle(config)
        h = ctypes.c_void_p()
        try:
            call("lc_model_create", cfg, int(max_batch), int(seed) & (2 ** 64 - 1), ctypes.byref(h))
        finally:
            L.lc_config_free(cfg)
        opts = L.lc_train_options_new()
        if not opts:
            L.lc_model_free(h)
            raise MemoryError("out of memory")
        m = cls(h.value, opts)
        m.set_train_options(seed=int(seed) & (2 ** 64 - 1))
        if threads is not None:
            m.set_threads(threads)
        return m

    @classmethod
    def load(cls, path, max_batch=0, threads=None):
        """A model from a language-model checkpoint (lc_checkpoint_load): weights, AdamW state, step, XL
        memory and the training options it was saved with. max_batch: rows planned for (0: the saved
        training batch). A checkpoint of another family the package has a module for is loaded by it
        (classify: longctx.Classifier, with predict and predict_proba, max_batch its texts per pass, 0: 16;
        seq2seq: longctx.seq2seq.Seq2SeqModel; hibert: longctx.hibert.Summarizer, with summarize and
        sentence_scores; any other family of the library's table, one registered at run time included:
        longctx.family.FamilyModel, its config by name; .family names it). Raises IOFailure (unreadable) or
        FormatError (not a longctx checkpoint the package loads: the message names the families)."""
        cpath = _path(path)
        max_batch = _int(max_batch, "max_batch")
        family = _family_of(path)
        if family == "classify":  # another family: its own class (python/longctx/classify.py)
            from .classify import Classifier
            return Classifier.load(cpath, max_batch, threads)
        if family in _FAMILIES:  # another family's module (python/longctx/<family>.py): its model class
            return _FAMILIES[family](path, threads)
        if family is not None and family not in _LM_FAMILIES:  # a family of the library's table only
            from .family import FamilyModel, families
            if family in families():
                return FamilyModel.load(cpath)
        L = lib()
        opts = L.lc_train_options_new()
        if not opts:
            raise MemoryError("out of memory")
        h = ctypes.c_void_p()
        try:
            if family is not None and family not in _LM_FAMILIES:
                raise FormatError(3, "%s: a %s checkpoint: longctx.Model loads language models only (model = %s); "
                                  "%s checkpoints are not in the Python package yet (use the longctx command)"
                                  % (os.fspath(path), family, " or ".join(_LM_FAMILIES), family))
            call("lc_checkpoint_load", cpath, max_batch, ctypes.byref(h), opts)
        except BaseException:
            if opts is not None:
                L.lc_train_options_free(opts)
            raise
        m = cls(h.value, opts)
        if threads is not None:
            m.set_threads(threads)
        return m

    def save(self, path):
        """Write a checkpoint (lc_checkpoint_save: atomic; weights, AdamW state, step, training options
        and data record; XL memory from training, not inference state)."""
        cpath = _path(path)
        call("lc_checkpoint_save", self._h, self._opts, cpath)

    # ------------------------------------------------------------ properties
    @property
    def config(self):
        """The configuration as a dict of lc_config's fields (a copy: changing it changes nothing)."""
        L = lib()
        return _read_fields(L.lc_model_config(self._h), L.lc_config_key, L.lc_config_get_str)

    @property
    def train_options(self):
        """The training options (lc_train_options' settable fields) as a dict (a copy)."""
        L = lib()
        return _read_fields(self._opts, L.lc_train_options_key, L.lc_train_options_get_str)

    def set_train_options(self, **options):
        """Set training options by name (steps, lr, warmup, batch, ...; lc_train_options' fields or the CLI's
        spellings). They are used by train_step and train and saved in checkpoints."""
        for key, value in options.items():
            call("lc_train_options_set_str", self._opts, _cstr(str(key), "option name"),
                 _cstr(_to_text(value), "option %s" % key))

    @property
    def num_params(self):
        return int(lib().lc_model_num_params(self._h))

    @property
    def step(self):
        """Optimizer steps done."""
        return int(lib().lc_model_step(self._h))

    @property
    def threads(self):
        return int(lib().lc_model_threads(self._h))

    def set_threads(self, n):
        """The compute plan's thread count (n <= 0: the cores this process may use). Results do not depend
        on it (every sum is taken in a fixed order)."""
        call("lc_model_set_threads", self._h, _int(n, "threads"))

    @property
    def capacity(self):
        """(max_batch, seg_len, mem_len) the activations are planned for."""
        b, t, mlen = ctypes.c_int(), ctypes.c_int(), ctypes.c_int()
        lib().lc_model_capacity(self._h, ctypes.byref(b), ctypes.byref(t), ctypes.byref(mlen))
        return b.value, t.value, mlen.value

    def resize(self, max_batch=None, seg_len=None, mem_len=None):
        """Re-plan the activations for other batch, segment and (XL) memory lengths (lc_model_resize;
        resets the XL memory). Omitted values keep the current capacity."""
        b, t, mlen = self.capacity
        call("lc_model_resize", self._h, _int(b if max_batch is None else max_batch, "max_batch"),
             _int(t if seg_len is None else seg_len, "seg_len"), _int(mlen if mem_len is None else mem_len, "mem_len"))

    @property
    def memory_rows(self):
        """Rows currently held in each layer's XL memory (0 for vanilla models or after a reset)."""
        return int(lib().lc_model_memory_rows(self._h))

    def reset_memory(self):
        """Forget the XL memory: the next segment starts without context."""
        lib().lc_model_reset_memory(self._h)

    # ------------------------------------------------------------ tensors
    def _tensor_list(self):
        L = lib()
        n = L.lc_model_tensor_count(self._h)
        name, ndim, trained = ctypes.c_char_p(), ctypes.c_int(), ctypes.c_int()
        shape = (ctypes.c_long * 2)()
        out = []
        for i in range(n):
            call("lc_model_tensor_info", self._h, i, ctypes.byref(name), ctypes.byref(ndim), shape,
                 ctypes.byref(trained))
            dims = (shape[0],) if ndim.value == 1 else (shape[0], shape[1])
            out.append((i, name.value.decode(), dims, bool(trained.value)))
        return out

    def _views(self, part, trained_only):
        L = lib()
        owner = self._live()  # what the views keep alive: the C model, even after close()
        out = {}
        for i, name, dims, trained in self._tensor_list():
            if trained_only and not trained:
                continue
            ptr = L.lc_model_tensor_data(self._h, i, _TENSOR_PART[part])
            addr = ctypes.cast(ptr, ctypes.c_void_p).value
            if not addr:
                continue
            out[name] = np.asarray(_View(owner, addr, dims))
        return out

    def parameters(self):
        """{name: float32 numpy array} of every trained parameter, in checkpoint order, with the
        checkpoint's names (docs/reference/checkpoint.md). The arrays are views onto the model's own buffers, not
        copies: writing one changes the model (and they keep the model alive)."""
        return self._views("value", True)

    def tensors(self):
        """parameters() plus the attention kinds' non-learned state (e.g. routing centroids, Linformer or
        BigBird plans), all as views."""
        return self._views("value", False)

    def gradients(self):
        """{name: view} of the gradient buffers (what the last train_step accumulated)."""
        return self._views("grad", True)

    # ------------------------------------------------------------ inference
    def _tokens(self, tokens, what):
        arr = np.asarray(tokens)
        if arr.dtype.kind not in "iu":
            raise ArgumentError(1, "%s must be integers (bytes 0..255), got dtype %s" % (what, arr.dtype))
        if arr.ndim == 1:
            arr = arr[None, :]
        if arr.ndim != 2 or arr.shape[0] < 1 or arr.shape[1] < 1:
            raise ArgumentError(1, "%s must have shape [B, T] with B, T >= 1, got %s" % (what, arr.shape))
        lo, hi = int(arr.min()), int(arr.max())  # a C int each: a wider value must not wrap into a byte
        if lo < -2 ** 31 or hi >= 2 ** 31:
            bad = lo if lo < -2 ** 31 else hi
            raise ArgumentError(1, "%s: value %d is not a byte (0..255)" % (what, bad))
        return np.ascontiguousarray(arr, dtype=np.int32)

    def _fit(self, B, T, memory):
        """Re-plan when the batch or segment is larger than planned (only when the memory is reset)."""
        b, t, mlen = self.capacity
        if B > b or T > t:
            if memory:
                raise ArgumentError(1, "batch %d x %d tokens exceeds the planned %d x %d; with memory='keep' "
                                    "the plan cannot grow (call resize() or use memory=None)" % (B, T, b, t))
            self.resize(max(B, b), max(T, t), mlen)

    @staticmethod
    def _memory_flag(memory):
        if memory is None or memory is False or memory == "reset":
            return False
        if memory is True or memory == "keep":
            return True
        raise ArgumentError(1, "memory must be None/'reset' or 'keep', got %r" % (memory,))

    def logits(self, tokens, memory=None):
        """Next-byte logits of a batch: tokens [B, T] (or [T]) of ints 0..255 (256: the mask symbol of an
        MLM model) -> float32 [B, T, 256] (or [T, 256]). One inference forward (no dropout).

        memory (Transformer-XL): None or "reset" (default): the model's memory is forgotten first, so the
        result depends on `tokens` alone; "keep": the B rows continue the B streams of the previous call
        (logits or train_step) and attend to the hidden states it left in memory (up to mem_len rows per
        layer), as consecutive segments do in training and evaluation. Either way the call leaves this
        segment in the memory for the next "keep". Vanilla models have no memory and ignore it."""
        keep = self._memory_flag(memory)
        arr = np.asarray(tokens)
        squeeze = arr.ndim == 1
        tok = self._tokens(tokens, "tokens")
        B, T = tok.shape
        self._fit(B, T, keep)
        if not keep:
            self.reset_memory()
        out = np.empty((B, T, VOCAB), dtype=np.float32)
        call("lc_model_forward_logits", self._h, tok.ctypes.data_as(_lib.c_int_p), B, T,
             out.ctypes.data_as(_lib.c_float_p))
        return out[0] if squeeze else out

    def eval(self, path=None, split=None, seg_len=0, batch=0, splits="auto", details=False, text=None):
        """Bits per byte (lc_evaluate; MLM models: per masked byte, lc_evaluate_mlm) of a file or of a text.

        path: a file (str or os.PathLike; FileNotFoundError when it names none): part `split` of it, "valid"
        by default as in `longctx eval`, or "train", "test", "all"; `splits` picks the split rule: auto,
        enwik8, nanogpt. text (keyword): a str (its UTF-8 bytes) or bytes-like, scored whole. Give exactly
        one of the two. seg_len: evaluation segment (0: the model's); batch: vanilla segments per pass (0:
        the planned batch). XL models read one stream with memory carried across segments; the model's own
        memory is kept. Returns the bpc as a float, or with details=True a dict {bpc, accuracy, tokens}."""
        if (path is None) == (text is None):
            raise TypeError("eval: give a file as path or a text as text= (one of them)")
        seg_len, batch = _int(seg_len, "seg_len"), _int(batch, "batch")
        if path is not None:
            cpath = _path(path)
            if not os.path.exists(path):
                raise FileNotFoundError(errno.ENOENT, "eval: no such file (to score a str, pass it as text=)",
                                        os.fspath(path))
            part = _PARTS.get(split or "valid")
            if part is None:
                raise ArgumentError(1, "split must be train, valid, test or all, got %r" % (split,))
            if splits not in _SPLITS:
                raise ArgumentError(1, "splits must be auto, enwik8 or nanogpt, got %r" % (splits,))
            size = os.path.getsize(path) if os.path.isfile(path) else 0
        else:
            if isinstance(text, str):
                data = text.encode("utf-8")
            elif isinstance(text, (bytes, bytearray, memoryview)):
                data = bytes(text)
            else:
                raise TypeError("text must be a str or bytes, got %s" % type(text).__name__)
            if split is not None:
                raise ArgumentError(1, "split applies to a file; text is scored whole")
            size = len(data)
        L = lib()
        bpc, acc, n = ctypes.c_double(), ctypes.c_double(float("nan")), ctypes.c_long()
        b, t, mlen = self.capacity
        if seg_len and seg_len > t:
            self.resize(b, seg_len, mlen)
        seg = int(seg_len or self.capacity[1])
        if batch:  # never plan for more segments than the data has
            batch = max(1, min(batch, -(-size // max(seg, 1))))
            if batch > b:
                self.resize(batch, None, None)
        if path is not None:
            call("lc_evaluate_file", self._h, cpath, _SPLITS[splits], part, seg, batch,
                 ctypes.byref(bpc), ctypes.byref(acc), ctypes.byref(n))
        elif self.config["objective"] == "mlm":
            call("lc_evaluate_mlm", self._h, data, len(data), seg, int(batch or b), 0x6D6C6D2D6576616C,
                 ctypes.byref(bpc), ctypes.byref(acc), ctypes.byref(n))
        else:
            call("lc_evaluate", self._h, data, len(data), seg, int(batch or b), ctypes.byref(bpc), ctypes.byref(n))
        if details:
            return {"bpc": bpc.value, "accuracy": acc.value, "tokens": n.value}
        return bpc.value

    def generate(self, prompt="", n=256, temperature=0.8, top_k=0, seed=1, chunk=1):
        """An iterator over n generated bytes continuing `prompt` (lc_sample's sampler, one byte per step:
        temperature 0 = greedy, top_k 0 = all bytes, seeded; the same bytes as `longctx sample` with the
        same arguments). Transformer-XL reads the prompt into its memory (the decode cache) and then feeds
        one byte per step, so each byte costs the same however long the text is.

        A str prompt yields str chunks (UTF-8 decoded incrementally, a character is never split;
        undecodable bytes become U+FFFD); a bytes prompt yields bytes chunks. chunk: bytes per yielded
        chunk (the last may be shorter). Arguments of another type raise TypeError. The model is busy until
        the iterator ends or is closed; closing the model first makes the iterator raise."""
        if isinstance(prompt, str):
            text, data = True, prompt.encode("utf-8")
        elif isinstance(prompt, (bytes, bytearray, memoryview)):
            text, data = False, bytes(prompt)
        else:
            raise TypeError("prompt must be a str or bytes, got %s" % type(prompt).__name__)
        n, top_k, seed, chunk = _int(n, "n"), _int(top_k, "top_k"), _int(seed, "seed"), _int(chunk, "chunk")
        temperature = _number(temperature, "temperature")
        if n < 0:
            raise ArgumentError(1, "n must be >= 0, got %d" % n)
        if top_k < 0 or top_k > 256:
            raise ArgumentError(1, "top_k must be 0..256, got %d" % top_k)
        self._live()
        return self._generate(data, n, temperature, top_k, seed & (2 ** 64 - 1), text, max(1, chunk))

    def _generate(self, data, n, temperature, top_k, seed, text, chunk):
        L = lib()
        owner = self._live()  # held until the C generator is freed, whatever happens to the Model meanwhile
        cfg = self.config
        b, t, mlen = self.capacity
        if t != cfg["seq_len"]:  # read the prompt in segments of the trained length, as `longctx sample` does
            self.resize(b, cfg["seq_len"], mlen)
        g = ctypes.c_void_p()
        call("lc_generator_new", owner.model, data, len(data), temperature, top_k, seed, ctypes.byref(g))
        decoder = codecs.getincrementaldecoder("utf-8")("replace") if text else None
        byte = ctypes.c_int()
        try:
            buf = bytearray()
            for i in range(n):
                self._live()  # a Model closed meanwhile: raise, never step a generator of a freed model
                check(L.lc_generator_next(g, ctypes.byref(byte)))
                buf.append(byte.value)
                if len(buf) >= chunk or i == n - 1:
                    if decoder is not None:
                        s = decoder.decode(bytes(buf), final=(i == n - 1))
                        buf = bytearray()
                        if s:
                            yield s
                    else:
                        out, buf = bytes(buf), bytearray()
                        yield out
        finally:
            L.lc_generator_free(g)

    # ------------------------------------------------------------ training
    def train_step(self, tokens, targets, memory=None):
        """One optimisation step (lc_train_step) on tokens [B, T] and targets [B, T] (targets < 0 are not
        scored), with the training options (set_train_options: lr, warmup, steps, clip, ...). Returns the
        mean loss in nats per scored byte before the update. memory as in logits(): None resets the XL
        memory first; "keep" continues the streams of the previous train_step (not of logits(): inference
        keeps its memory in another form, which training refuses)."""
        keep = self._memory_flag(memory)
        tok = self._tokens(tokens, "tokens")
        tgt = self._tokens(targets, "targets")
        if tok.shape != tgt.shape:
            raise ArgumentError(1, "tokens %s and targets %s differ in shape" % (tok.shape, tgt.shape))
        B, T = tok.shape
        self._fit(B, T, keep)
        if not keep:
            self.reset_memory()
        loss = ctypes.c_double()
        call("lc_train_step", self._h, self._opts, tok.ctypes.data_as(_lib.c_int_p), tgt.ctypes.data_as(_lib.c_int_p),
             B, T, ctypes.byref(loss))
        return loss.value

    def train(self, data_path, callback=None, splits="auto", **options):
        """Train on a file (lc_train: contiguous streams, cosine schedule, periodic validation) from the
        model's current step to options' `steps`. options: training options by name (steps, batch, lr,
        warmup, eval_every, stop_after, seed, ...), kept and saved with the model. callback(progress) is
        called after every step with a dict (step, steps, start_step, loss, lr, tokens_per_s, elapsed_s,
        valid_bpc, valid_accuracy, comm_s, processes; valid_* are NaN except after a validation pass);
        return True from it to stop. An exception in the callback (KeyboardInterrupt included) stops
        training after that step and is raised from train(). Returns the list of progress dicts."""
        cpath = _path(data_path, "data_path")
        self.set_train_options(**options)
        if splits not in _SPLITS:
            raise ArgumentError(1, "splits must be auto, enwik8 or nanogpt, got %r" % (splits,))
        keys = []
        while lib().lc_progress_key(len(keys)) is not None:
            keys.append(lib().lc_progress_key(len(keys)).decode())
        history, failure = [], []

        def hook(values, count, user):
            try:
                p = {k: values[i] for i, k in enumerate(keys[:count])}
                for k in ("step", "steps", "start_step", "processes"):
                    p[k] = int(p[k])
                history.append(p)
                if callback is not None and callback(p):
                    return 1
                return 0
            except BaseException as e:  # noqa: B902 - raised again once lc_train has returned
                failure.append(e)
                return 1

        fn = _lib.TRAIN_CALLBACK(hook)
        # lc_train_file checks the data against the batch, then re-plans the model for it
        st = lib().lc_train_file(self._h, cpath, _SPLITS[splits], self._opts, fn, None)
        if failure:
            raise failure[0]
        check(st)
        return history

    def __repr__(self):
        if self.closed:
            return "<longctx.Model (closed)>"
        c = self.config
        return "<longctx.Model %s %d layers, d_model %d, %d heads, seq_len %d, attn %r, %d parameters, step %d>" % (
            c["model"], c["n_layer"], c["d_model"], c["n_head"], c["seq_len"], c["attn"] or "full", self.num_params,
            self.step)
