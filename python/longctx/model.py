"""longctx.Model: a byte-level language model of the C library (Transformer-XL or vanilla, any attention
kind), driven from Python through ctypes. See docs/python.md for the whole API."""

import codecs
import ctypes
import math
import os

import numpy as np

from . import _lib
from ._lib import call, check, lib
from .errors import ArgumentError, LongctxError

VOCAB = 256
MASK_TOKEN = 256  # the masked-LM mask symbol (models with objective "mlm")

# lc_value_kind
_INT, _FLOAT, _BOOL, _STRING = 0, 1, 2, 3
_SPLITS = {"auto": 0, "enwik8": 1, "nanogpt": 2}
_PARTS = {"train": 0, "valid": 1, "test": 2, "all": 3}
_TENSOR_PART = {"value": 0, "grad": 1, "adam_m": 2, "adam_v": 3}
_XL_ONLY = ("mem_len", "clamp_len", "same_length", "shared_uv")


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


def _from_text(text, kind):
    if kind == _INT:
        return int(text)
    if kind == _FLOAT:  # a float32 field: its shortest repr (0.002, not 0.00200000009)
        return float(str(np.float32(text)))
    if kind == _BOOL:
        return text == "1"
    return text


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
        given = set()
        for key, value in config.items():
            ck = _canonical(key)
            if ck == "preset":
                continue
            call("lc_config_set_str", cfg, str(key).encode(), _to_text(value).encode())
            given.add(_field_of(cfg, ck))
        current = _read_fields(cfg, L.lc_config_key, L.lc_config_get_str)
        if current["objective"] == "mlm" and "model" not in given:
            call("lc_config_set_str", cfg, b"model", b"vanilla")  # an encoder: absolute positions, no memory
            current["model"] = "vanilla"
        if current["model"] == "xl":
            if "mem_len" not in given:
                call("lc_config_set_str", cfg, b"mem_len", str(current["seq_len"]).encode())
        else:
            bad = [k for k in _XL_ONLY if k in given and current[k]]
            if bad:
                raise ArgumentError(1, "config %s needs model 'xl'" % bad[0])
            call("lc_config_set_str", cfg, b"mem_len", b"0")
        call("lc_config_validate", cfg)
        return cfg
    except BaseException:
        L.lc_config_free(cfg)
        raise


def _field_of(cfg, key):
    """The struct field a key (field name or CLI flag name) sets: the canonical name of config()."""
    aliases = {"layers": "n_layer", "dim": "d_model", "heads": "n_head", "ffn": "d_ff", "seg_len": "seq_len",
               "share_qk": "qk_share", "share_attn": "attn_share", "untied": "tied"}
    return aliases.get(key, key)


class _View(object):
    """An __array_interface__ over memory the model owns; numpy arrays made from it keep the model alive."""

    def __init__(self, owner, address, shape):
        self._owner = owner
        self.__array_interface__ = {"data": (address, False), "shape": tuple(shape), "typestr": "<f4",
                                    "version": 3}


class Model(object):
    """A longctx language model. Build one with Model.create(config) or Model.load(path).

    Every method calls into liblongctx through ctypes, which releases the GIL for the duration of the
    call: other Python threads run meanwhile. One model must not be used by two threads at once."""

    def __init__(self, handle, options):
        self._h = ctypes.c_void_p(handle)
        self._opts = ctypes.c_void_p(options)
        self._gen = None

    def __del__(self):
        L = _lib._lib
        if L is None:
            return
        if getattr(self, "_h", None) and self._h.value:
            L.lc_model_free(self._h)
            self._h = ctypes.c_void_p(None)
        if getattr(self, "_opts", None) and self._opts.value:
            L.lc_train_options_free(self._opts)
            self._opts = ctypes.c_void_p(None)

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
        training batch). Raises IOFailure (unreadable) or FormatError (not a longctx LM checkpoint)."""
        L = lib()
        opts = L.lc_train_options_new()
        if not opts:
            raise MemoryError("out of memory")
        h = ctypes.c_void_p()
        try:
            call("lc_checkpoint_load", os.fsencode(path), int(max_batch), ctypes.byref(h), opts)
        except BaseException:
            L.lc_train_options_free(opts)
            raise
        m = cls(h.value, opts)
        if threads is not None:
            m.set_threads(threads)
        return m

    def save(self, path):
        """Write a checkpoint (lc_checkpoint_save: atomic; weights, AdamW state, step, training options
        and data record; XL memory from training, not inference state)."""
        call("lc_checkpoint_save", self._h, self._opts, os.fsencode(path))

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
            call("lc_train_options_set_str", self._opts, str(key).encode(), _to_text(value).encode())

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
        call("lc_model_set_threads", self._h, int(n))

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
        call("lc_model_resize", self._h, int(b if max_batch is None else max_batch),
             int(t if seg_len is None else seg_len), int(mlen if mem_len is None else mem_len))

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
        out = {}
        for i, name, dims, trained in self._tensor_list():
            if trained_only and not trained:
                continue
            ptr = L.lc_model_tensor_data(self._h, i, _TENSOR_PART[part])
            addr = ctypes.cast(ptr, ctypes.c_void_p).value
            if not addr:
                continue
            out[name] = np.asarray(_View(self, addr, dims))
        return out

    def parameters(self):
        """{name: float32 numpy array} of every trained parameter, in checkpoint order, with the
        checkpoint's names (docs/checkpoint.md). The arrays are views onto the model's own buffers, not
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

    def eval(self, text_or_path, split=None, seg_len=0, batch=0, splits="auto", details=False):
        """Bits per byte (lc_evaluate; MLM models: per masked byte, lc_evaluate_mlm).

        text_or_path: bytes or bytearray (scored whole), a path (os.PathLike, or a str naming an existing
        file: part `split` of it, "valid" by default as in `longctx eval`, or "train", "test", "all";
        `splits` picks the split rule: auto, enwik8, nanogpt), or any other str (its UTF-8 bytes, scored
        whole). seg_len: evaluation segment (0: the model's); batch: vanilla segments per pass (0: the
        planned batch). XL models read one stream with memory carried across segments; the model's own
        memory is kept. Returns the bpc as a float, or with details=True a dict {bpc, accuracy, tokens}."""
        L = lib()
        bpc, acc, n = ctypes.c_double(), ctypes.c_double(float("nan")), ctypes.c_long()
        b, t, mlen = self.capacity
        if seg_len and seg_len > t:
            self.resize(b, seg_len, mlen)
        if batch and batch > b:
            self.resize(batch, None, None)
        seg = int(seg_len or self.capacity[1])
        is_path = isinstance(text_or_path, os.PathLike) or (
            isinstance(text_or_path, str) and "\n" not in text_or_path and os.path.isfile(text_or_path))
        if is_path:
            part = _PARTS.get(split or "valid")
            if part is None:
                raise ArgumentError(1, "split must be train, valid, test or all, got %r" % (split,))
            if splits not in _SPLITS:
                raise ArgumentError(1, "splits must be auto, enwik8 or nanogpt, got %r" % (splits,))
            call("lc_evaluate_file", self._h, os.fsencode(text_or_path), _SPLITS[splits], part, seg, int(batch),
                 ctypes.byref(bpc), ctypes.byref(acc), ctypes.byref(n))
        else:
            if split is not None:
                raise ArgumentError(1, "split applies to a file; text is scored whole")
            data = text_or_path.encode("utf-8") if isinstance(text_or_path, str) else bytes(text_or_path)
            if self.config["objective"] == "mlm":
                call("lc_evaluate_mlm", self._h, data, len(data), seg, int(batch or b), 0x6D6C6D2D6576616C,
                     ctypes.byref(bpc), ctypes.byref(acc), ctypes.byref(n))
            else:
                call("lc_evaluate", self._h, data, len(data), seg, int(batch or b), ctypes.byref(bpc),
                     ctypes.byref(n))
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
        chunk (the last may be shorter). The model is busy until the iterator ends or is closed."""
        text = isinstance(prompt, str)
        data = prompt.encode("utf-8") if text else bytes(prompt)
        if n < 0:
            raise ArgumentError(1, "n must be >= 0, got %d" % n)
        if top_k < 0 or top_k > 256:
            raise ArgumentError(1, "top_k must be 0..256, got %d" % top_k)
        return self._generate(data, int(n), float(temperature), int(top_k), int(seed) & (2 ** 64 - 1), text,
                              max(1, int(chunk)))

    def _generate(self, data, n, temperature, top_k, seed, text, chunk):
        L = lib()
        cfg = self.config
        b, t, mlen = self.capacity
        if t != cfg["seq_len"]:  # read the prompt in segments of the trained length, as `longctx sample` does
            self.resize(b, cfg["seq_len"], mlen)
        g = ctypes.c_void_p()
        call("lc_generator_new", self._h, data, len(data), temperature, top_k, seed, ctypes.byref(g))
        decoder = codecs.getincrementaldecoder("utf-8")("replace") if text else None
        byte = ctypes.c_int()
        try:
            buf = bytearray()
            for i in range(n):
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
        self.set_train_options(**options)
        if splits not in _SPLITS:
            raise ArgumentError(1, "splits must be auto, enwik8 or nanogpt, got %r" % (splits,))
        batch = self.train_options["batch"]
        b, t, mlen = self.capacity
        cfg = self.config
        if batch > b or t != cfg["seq_len"]:
            self.resize(max(batch, b), cfg["seq_len"], mlen)
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
        st = lib().lc_train_file(self._h, os.fsencode(data_path), _SPLITS[splits], self._opts, fn, None)
        if failure:
            raise failure[0]
        check(st)
        return history

    def __repr__(self):
        c = self.config
        return "<longctx.Model %s %d layers, d_model %d, %d heads, seq_len %d, attn %r, %d parameters, step %d>" % (
            c["model"], c["n_layer"], c["d_model"], c["n_head"], c["seq_len"], c["attn"] or "full", self.num_params,
            self.step)
