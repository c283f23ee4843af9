#!/usr/bin/env python3
"""Rewrites a checkpoint's metadata (the safetensors JSON header's __metadata__), keeping every tensor byte:
tests/ckpt_set_meta.py IN OUT KEY=VALUE... (the CLI tests craft checkpoints whose metadata lies about the
tensors they hold)."""
import json
import struct
import sys

src, dst, pairs = sys.argv[1], sys.argv[2], sys.argv[3:]
with open(src, "rb") as f:
    blob = f.read()
(n,) = struct.unpack("<Q", blob[:8])
header = json.loads(blob[8:8 + n])
for pair in pairs:
    key, value = pair.split("=", 1)
    header["__metadata__"][key] = value
text = json.dumps(header, separators=(",", ":")).encode()
text += b" " * (-len(text) % 8)
with open(dst, "wb") as f:
    f.write(struct.pack("<Q", len(text)) + text + blob[8 + n:])
