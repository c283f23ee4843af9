"""The C side of the torch loader's tests, through the package's ctypes binding (longctx.Model):
random checkpoints of a given configuration, and the C model's logits for them.

make_checkpoint(path, config, seed) creates a model (Model.create), replaces every parameter by random
values of a useful size (the training initialisation's N(0, 0.02^2) leaves every attention row nearly
uniform, which would hide a wrong mask), optionally fills an XL model's memory by training steps on random
segments (what a checkpoint saves is the training memory), and saves it. c_logits(path, segments) loads it (Model.load) and returns the C model's logits.
"""
import json
import os
import struct

import numpy as np

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))


def binding_problem():
    """Why the binding cannot run the C model here (a string), or None."""
    try:
        import longctx
        longctx.library_path()
    except Exception as e:  # noqa: BLE001 - no package or no library: the test is skipped with the reason
        return "the longctx binding cannot load liblongctx.so: %s" % e
    return None


def random_values(name, shape, rng):
    """Random values for the parameter `name` of `shape` that make the attention sharp and the outputs
    varied: LayerNorm gains around 1, biases and position biases around 0, embeddings (wte, wpe, words)
    N(0, 0.8^2), matrices with a scale of about 1/sqrt(fan-in) times a few."""
    if name.endswith("ln1.weight") or name.endswith("ln2.weight") or name.endswith("ln_f.weight"):
        vals = 1.0 + 0.3 * rng.standard_normal(shape)
    elif name.endswith(".bias") or name in ("u", "v") or name.endswith(".attn.u") or name.endswith(".attn.v"):
        vals = 0.3 * rng.standard_normal(shape)
    elif name.endswith(".params"):  # Linformer's E, F (k x n each, n = positions)
        vals = rng.standard_normal(shape) * 0.4
    elif len(shape) == 2:
        vals = rng.standard_normal(shape) * (1.5 / np.sqrt(shape[1]))
        if name.split(".")[-1] in ("wte", "wpe", "words"):
            vals = rng.standard_normal(shape) * 0.8
    else:
        vals = rng.standard_normal(shape) * 0.3
    return vals.astype(np.float32)


def _randomize(model, rng):
    """Every parameter (not kind state) to random_values."""
    for name, view in model.parameters().items():
        view[...] = random_values(name, view.shape, rng)


def write_safetensors(path, metadata, tensors=()):
    """A safetensors file of (name, array) pairs (float32) with metadata, as longctx writes them."""
    header = {"__metadata__": metadata}
    blobs, off = [], 0
    for name, arr in tensors:
        raw = np.ascontiguousarray(arr, dtype="<f4").tobytes()
        header[name] = {"dtype": "F32", "shape": list(arr.shape), "data_offsets": [off, off + len(raw)]}
        blobs.append(raw)
        off += len(raw)
    text = json.dumps(header).encode()
    text += b" " * (-(8 + len(text)) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)) + text + b"".join(blobs))


def make_checkpoint(path, config, seed=1, memory_segments=0, batch=2, seg_len=None):
    """Create a model of `config` (a dict for longctx.Model.create), randomize it, optionally run
    `memory_segments` segments of random bytes through it (an XL model then holds that memory; saved in
    the checkpoint as its training memory), save it to path; returns the config the C model reports."""
    import longctx
    m = longctx.Model.create(dict(config), seed=seed, max_batch=batch, threads=1)
    _randomize(m, np.random.default_rng(seed))
    rng = np.random.default_rng(seed + 1000)
    T = seg_len or m.config["seq_len"]
    if memory_segments:
        m.set_train_options(lr=1e-6, warmup=0, weight_decay=0.0)
    for i in range(memory_segments):  # training forwards keep the hidden-state memory a checkpoint saves
        tok = rng.integers(0, 256, size=(batch, T))
        m.train_step(tok, np.roll(tok, -1, axis=1), memory="keep" if i else None)
    m.save(path)
    return m.config


def c_logits(path, segments, saved_memory=False):
    """The C model's float32 logits [B, T, 256] for each token array of `segments`, fed one after another
    to one loaded model: the first starts from an empty memory (or, with saved_memory, from the memory
    the checkpoint holds), each next one continues the same streams (XL memory kept)."""
    import longctx
    m = longctx.Model.load(path, max_batch=max(np.asarray(s).shape[0] for s in segments), threads=1)
    outs = []
    for i, seg in enumerate(segments):
        keep = i > 0 or saved_memory
        outs.append(np.asarray(m.logits(np.asarray(seg, dtype=np.int32), memory="keep" if keep else None)))
    return outs
