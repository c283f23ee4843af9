#!/usr/bin/env python3
"""Quick start of the longctx Python package: train a tiny Transformer-XL on Tiny Shakespeare from
Python, plot its loss (matplotlib when present, else printed), generate text, and load the checkpoint
into PyTorch (when torch is present) to check it computes the same logits.

    make                                            # build/release/liblongctx.so
    PYTHONPATH=python python3 python/examples/quickstart.py [--steps 300] [--out quickstart.ckpt]
    python3 python/examples/quickstart.py           # with the package installed (make install, pip)

It imports whichever longctx package Python finds (it never puts the source tree on sys.path itself), and
says which, so it also tests an installed package.

The default 300 steps of 8 x 64 bytes took 3.5 minutes on a loaded 2-core machine (about 700 tokens/s
beside two training runs) and ended at 3.49 valid bits per byte, with recognisably English-shaped text;
the PyTorch module's logits matched the C model's to 3e-6.
"""

import argparse
import math
import os
import sys
import time

import numpy as np

import longctx

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data", default=os.path.join(REPO, "data", "tinyshakespeare.txt"))
    ap.add_argument("--steps", type=int, default=300)
    ap.add_argument("--out", default="quickstart.ckpt", help="checkpoint to write")
    ap.add_argument("--plot", default="quickstart_loss.png", help="loss plot to write (with matplotlib)")
    ap.add_argument("--threads", type=int, default=0, help="0: every core this process may use")
    args = ap.parse_args()

    # A tiny Transformer-XL: 2 layers of width 64, segments of 64 bytes with 64 rows of memory per layer.
    # The keys are lc_config's fields or the CLI's flag names (docs/guides/python.md).
    model = longctx.Model.create({"preset": "tiny", "seg_len": 64, "mem_len": 64}, seed=1337, threads=args.threads)
    print(model)
    print("package:", os.path.dirname(os.path.abspath(longctx.__file__)))
    print("library:", longctx.library_path())

    losses = []
    t0 = time.time()

    def progress(p):
        losses.append(p["loss"])
        if p["step"] % 50 == 0 or p["step"] == p["steps"]:
            line = "step %4d/%d  loss %.3f  (%.2f bpc)  %6.0f tokens/s" % (
                p["step"], p["steps"], p["loss"], p["loss"] / math.log(2), p["tokens_per_s"])
            if not math.isnan(p["valid_bpc"]):
                line += "  valid %.3f bpc" % p["valid_bpc"]
            print(line, flush=True)
        return False  # True would stop training here

    model.train(args.data, callback=progress, steps=args.steps, batch=8, lr=4e-3, warmup=20,
                eval_every=max(args.steps // 2, 1), eval_bytes=16384)
    print("trained %d steps in %.1f s" % (model.step, time.time() - t0))
    model.save(args.out)
    print("saved", args.out)

    print("valid bits per byte: %.3f" % model.eval(args.data, split="valid"))

    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("loss every 25 steps (install matplotlib for a plot):")
        print("  " + " ".join("%.2f" % x for x in losses[::25]))
    else:
        plt.figure(figsize=(6, 3.5))
        plt.plot(np.arange(1, len(losses) + 1), np.array(losses) / math.log(2))
        plt.xlabel("step")
        plt.ylabel("training bits per byte")
        plt.title("longctx: tiny Transformer-XL on Tiny Shakespeare")
        plt.tight_layout()
        plt.savefig(args.plot, dpi=100)
        print("loss plot:", args.plot)

    print("---- sample ----")
    prompt = "ROMEO:"
    sys.stdout.write(prompt)
    for chunk in model.generate(prompt, 300, temperature=0.8, top_k=10, seed=1):  # the 10 likeliest bytes
        sys.stdout.write(chunk)
        sys.stdout.flush()
    print("\n----------------")

    try:
        import torch
        import longctx.torch as lctorch
    except ImportError as e:
        print("PyTorch part skipped (%s)" % e)
        return
    module = lctorch.load(args.out)
    text = open(args.data, "rb").read()[:128]
    tokens = np.frombuffer(text, dtype=np.uint8).astype(np.int64)[None]
    with torch.no_grad():
        out = module(torch.from_numpy(tokens))
    torch_logits = (out[0] if isinstance(out, tuple) else out).numpy()
    c_logits = model.logits(tokens)
    print("PyTorch module: %s; max |logits - C logits| = %.2e" % (
        type(module).__name__, float(np.abs(torch_logits - c_logits).max())))


if __name__ == "__main__":
    main()
