"""Minimal safetensors writer/reader (F32 and I32 only), written by hand with struct + json + numpy.

Layout (https://huggingface.co/docs/safetensors):
    8 bytes: u64 little-endian N, the length of the JSON header in bytes
    N bytes: JSON header {"__metadata__": {str: str}, name: {"dtype", "shape", "data_offsets"}, ...}
             padded at the end with spaces so that the data section starts 8-byte aligned
    data:    each tensor's raw little-endian bytes, contiguous, in the order given to write();
             data_offsets = [begin, end) relative to the start of the data section.

The safetensors `__metadata__` maps strings to strings only; write() rejects anything else.
"""
import json
import struct

import numpy as np

_DTYPES = {"F32": np.dtype("<f4"), "I32": np.dtype("<i4")}


def _as_array(value, dtype_name):
    """numpy array of the dtype named (F32/I32), little-endian, C-contiguous.
    Accepts numpy arrays, torch tensors (moved to CPU, detached) and Python scalars/lists."""
    if hasattr(value, "detach"):  # torch.Tensor, without importing torch here
        value = value.detach().cpu().numpy()
    arr = np.asarray(value)
    want = _DTYPES[dtype_name]
    if dtype_name == "I32":
        if not np.issubdtype(arr.dtype, np.integer):
            raise TypeError("I32 tensor needs integer data, got %s" % arr.dtype)
        if arr.size and (arr.min() < -2**31 or arr.max() >= 2**31):
            raise ValueError("I32 tensor out of range")
    return np.ascontiguousarray(arr.astype(want, copy=False))


def write(path, tensors, metadata=None):
    """Write tensors to path.

    tensors: list of (name, dtype_name, array) with dtype_name "F32" or "I32", kept in that order;
             arrays may be numpy arrays or torch tensors (float64 values are rounded to float32).
    metadata: dict str -> str (or None).
    """
    header = {}
    if metadata:
        for k, v in metadata.items():
            if not isinstance(k, str) or not isinstance(v, str):
                raise TypeError("metadata must map str to str: %r: %r" % (k, v))
        header["__metadata__"] = dict(metadata)
    blobs = []
    offset = 0
    for name, dtype_name, value in tensors:
        if name == "__metadata__" or name in header:
            raise ValueError("duplicate or reserved tensor name %r" % name)
        if dtype_name not in _DTYPES:
            raise ValueError("unsupported dtype %r" % dtype_name)
        arr = _as_array(value, dtype_name)
        raw = arr.tobytes(order="C")
        header[name] = {"dtype": dtype_name, "shape": [int(s) for s in arr.shape],
                        "data_offsets": [offset, offset + len(raw)]}
        blobs.append(raw)
        offset += len(raw)
    hjson = json.dumps(header, separators=(",", ":"), ensure_ascii=True).encode("ascii")
    pad = (-(8 + len(hjson))) % 8
    hjson += b" " * pad
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(hjson)))
        f.write(hjson)
        for raw in blobs:
            f.write(raw)


def read(path):
    """Read path. Returns (tensors, metadata): tensors is a dict name -> numpy array in file order
    (dict preserves the header order), metadata a dict str -> str (empty if absent).
    Validates header length, dtypes, shapes against offsets, and that the tensors tile the data
    section exactly (contiguous, no gaps, no overlaps)."""
    with open(path, "rb") as f:
        buf = f.read()
    if len(buf) < 8:
        raise ValueError("%s: file too short" % path)
    (n,) = struct.unpack("<Q", buf[:8])
    if 8 + n > len(buf):
        raise ValueError("%s: header length %d exceeds file size %d" % (path, n, len(buf)))
    header = json.loads(buf[8:8 + n].decode("utf-8"))
    data = buf[8 + n:]
    metadata = header.pop("__metadata__", {}) or {}
    tensors = {}
    spans = []
    for name, info in header.items():
        dt = _DTYPES.get(info["dtype"])
        if dt is None:
            raise ValueError("%s: tensor %s: unsupported dtype %r" % (path, name, info["dtype"]))
        shape = tuple(int(s) for s in info["shape"])
        b, e = (int(x) for x in info["data_offsets"])
        count = int(np.prod(shape, dtype=np.int64)) if shape else 1
        if not (0 <= b <= e <= len(data)) or e - b != count * dt.itemsize:
            raise ValueError("%s: tensor %s: bad data_offsets %r for shape %r" % (path, name, [b, e], shape))
        tensors[name] = np.frombuffer(data, dtype=dt, count=count, offset=b).reshape(shape).copy()
        spans.append((b, e, name))
    spans.sort()
    pos = 0
    for b, e, name in spans:
        if b != pos:
            raise ValueError("%s: tensor %s: gap or overlap at offset %d" % (path, name, b))
        pos = e
    if pos != len(data):
        raise ValueError("%s: %d trailing bytes after the last tensor" % (path, len(data) - pos))
    return tensors, metadata


def header_order(path):
    """Tensor names in the order their data appears in the file (by data offset)."""
    with open(path, "rb") as f:
        (n,) = struct.unpack("<Q", f.read(8))
        header = json.loads(f.read(n).decode("utf-8"))
    header.pop("__metadata__", None)
    return [k for k, _ in sorted(header.items(), key=lambda kv: kv[1]["data_offsets"][0])]


# What the PyTorch references (lm_ref.py, xl_ref.py) implement, per longctx metadata key: a value the
# reference honours, or a test of it. Everything else a longctx checkpoint can say (docs/reference/checkpoint.md)
# is refused by check_reference_metadata rather than silently loaded as something else.
_SUPPORTED = {
    "format": lambda v: v == "longctx",
    "format_version": lambda v: v == "1",
    "vocab": lambda v: v == "256",
    "attn": lambda v: v in ("", "full"),
    "objective": lambda v: v == "clm",
    "qk_share": lambda v: v in ("0", "1"),
    "attn_share": lambda v: v in ("0", "1"),
    "reversible": lambda v: v == "0",
    "extra_tokens": lambda v: v == "0",
    "precision": lambda v: v == "fp32",
}
_WHAT = {"attn": "attention kinds other than full", "objective": "the masked-LM encoder",
         "qk_share": "tied query/key projections", "attn_share": "attention shared across layers",
         "reversible": "reversible layers", "extra_tokens": "extra (global) tokens",
         "precision": "bf16 products"}
# Keys that do not change the model's function: shape and behaviour keys the references read, the
# chunking of the feed-forward rows, training state and options, and the fixtures' own notes.
_NEUTRAL = {"model", "n_layer", "d_model", "n_head", "d_ff", "seq_len", "norm", "activation", "tied", "dropout",
            "ffn_chunk", "step", "seed", "batch", "generator"}
_XL_KEYS = {"mem_len", "clamp_len", "same_length", "shared_uv", "state.memory_rows", "state.memory_batch"}


def check_reference_metadata(meta, model):
    """Raise ValueError unless metadata `meta` (a longctx checkpoint's or a fixture's) describes a model
    of family `model` ("vanilla" or "xl") that the references implement exactly."""
    if meta.get("model", model) != model:
        raise ValueError("metadata model = %r: this reference implements %r" % (meta.get("model"), model))
    for key, value in meta.items():
        if key in _SUPPORTED:
            if not _SUPPORTED[key](value):
                raise ValueError("metadata %s = %r: the PyTorch reference does not implement %s" %
                                 (key, value, _WHAT.get(key, "this value")))
        elif key in _XL_KEYS:
            if model != "xl":
                raise ValueError("metadata %s belongs to xl models, not %s" % (key, model))
        elif key not in _NEUTRAL and not key.startswith("train."):
            raise ValueError("metadata key %r is unknown to the PyTorch reference" % key)
