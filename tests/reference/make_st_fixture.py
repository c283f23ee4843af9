#!/usr/bin/env python3
"""Writes tests/fixtures/st_interop.safetensors exactly as the safetensors format defines it
(https://huggingface.co/docs/safetensors), independently of the C writer, so test_safetensors.c can
check that longctx reads files made elsewhere. Uses numpy, json and struct only (not the
`safetensors` package). Layout follows the reference writer: u64 little-endian header size N, N bytes
of compact UTF-8 JSON padded with spaces so the data starts 8-byte aligned, then the tensors' bytes,
ordered by dtype size (largest first) then name. Header keys are written sorted, so header order
differs from data order on purpose.

usage: python3 tests/reference/make_st_fixture.py [OUT]   (default tests/fixtures/st_interop.safetensors)
"""
import json
import struct
import sys

import numpy as np

DTYPE_NAMES = {np.dtype("<f4"): "F32", np.dtype("<i4"): "I32", np.dtype("<f2"): "F16", np.dtype("<i8"): "I64"}


def tensors():
    return {
        "embed.weight": (np.arange(12, dtype="<f4") * 0.5 - 1.0).reshape(3, 4),
        "blocks.0.ln1.weight": np.array([1.0, -2.5, 3.25, 1e-3], dtype="<f4"),
        "tokens": np.array([[-1, 0, 1], [2**31 - 1, -(2**31), 7]], dtype="<i4"),
        "half": np.array([1.0, -2.0, 0.5], dtype="<f2"),
        "step": np.array(123456789012, dtype="<i8"),
        "scalar": np.array(3.5, dtype="<f4"),
        "empty": np.zeros((0, 5), dtype="<f4"),
    }


def serialize(named, metadata):
    order = sorted(named, key=lambda k: (-named[k].dtype.itemsize, k))
    header, chunks, offset = {}, [], 0
    for name in order:
        data = np.ascontiguousarray(named[name]).tobytes()
        header[name] = {
            "dtype": DTYPE_NAMES[named[name].dtype],
            "shape": list(named[name].shape),
            "data_offsets": [offset, offset + len(data)],
        }
        chunks.append(data)
        offset += len(data)
    header = {"__metadata__": metadata, **{k: header[k] for k in sorted(header)}}
    text = json.dumps(header, separators=(",", ":"), ensure_ascii=False).encode("utf-8")
    text += b" " * ((8 - len(text) % 8) % 8)
    return struct.pack("<Q", len(text)) + text + b"".join(chunks)


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else "tests/fixtures/st_interop.safetensors"
    metadata = {"format": "pt", "note": 'h\u00e9llo "quoted"\n\u2713'}
    with open(out, "wb") as f:
        f.write(serialize(tensors(), metadata))


if __name__ == "__main__":
    main()
