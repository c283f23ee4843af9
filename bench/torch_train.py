#!/usr/bin/python3
"""PyTorch side of the longctx training-speed benchmark.

Builds the vanilla byte-level decoder LM of tests/reference/lm_ref.py (same definition and same
training init as longctx), trains it in float32 on random byte windows of a file and prints one
JSON line:

  {"impl": "pytorch", "torch": ..., "threads": N, "layers": .., "dim": .., "heads": .., "ffn": ..,
   "seg_len": .., "batch": .., "steps": .., "tokens_per_s": .., "ms_per_step_median": ..,
   "final_loss": .., ...extra descriptive keys}

Training: each step draws B random windows of T+1 bytes (inputs = first T, targets = last T),
computes the mean cross-entropy, backpropagates, clips the global gradient norm to 1.0 and takes
an AdamW step (betas (0.9, 0.95), eps 1e-8, weight decay 0.1 on parameters with >= 2 dims, i.e.
wte, wpe, lm_head and the linear weights; none on biases and LayerNorm parameters).
Only the --steps steps after the --warmup-steps warm-up steps are timed; a step's time covers
batch sampling, forward, backward, clipping and the optimizer step. tokens_per_s = B*T*steps /
(sum of timed step times).

Attention: torch.nn.functional.scaled_dot_product_attention(is_causal=True) where it exists
(PyTorch >= 2.0), otherwise explicit scores with a causal mask and torch.softmax (PyTorch 1.13).

Example (from the repository root):
  /usr/bin/python3 bench/torch_train.py --layers 4 --dim 128 --heads 4 --ffn 512 --seg-len 128 \
      --batch 16 --steps 20 --warmup-steps 3 --threads 2
"""
import argparse
import json
import os
import statistics
import sys
import time

import numpy as np
import torch

BENCH = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(BENCH)
sys.path.insert(0, os.path.join(REPO, "tests", "reference"))
import lm_ref  # noqa: E402


def parse_args(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--layers", type=int, default=4)
    ap.add_argument("--dim", type=int, default=128)
    ap.add_argument("--heads", type=int, default=4)
    ap.add_argument("--ffn", type=int, default=512)
    ap.add_argument("--seg-len", type=int, default=128, help="sequence length T (= number of positions)")
    ap.add_argument("--batch", type=int, default=16)
    ap.add_argument("--steps", type=int, default=20, help="timed steps")
    ap.add_argument("--warmup-steps", type=int, default=3, help="untimed steps before the timed ones")
    ap.add_argument("--threads", type=int, default=1, help="torch.set_num_threads")
    ap.add_argument("--norm", choices=["pre", "post"], default="pre")
    ap.add_argument("--activation", choices=["gelu", "relu"], default="gelu")
    ap.add_argument("--tied", type=int, choices=[0, 1], default=1)
    ap.add_argument("--dropout", type=float, default=0.0)
    ap.add_argument("--lr", type=float, default=1e-3)
    ap.add_argument("--weight-decay", type=float, default=0.1)
    ap.add_argument("--grad-clip", type=float, default=1.0)
    ap.add_argument("--attn", choices=["auto", "math", "sdpa"], default="auto",
                    help="auto: F.scaled_dot_product_attention if available, else mask + softmax")
    ap.add_argument("--data", default=os.path.join("data", "tinyshakespeare.txt"),
                    help="training bytes; a relative path is taken from the repository root")
    ap.add_argument("--seed", type=int, default=1234)
    return ap.parse_args(argv)


def main(argv=None):
    args = parse_args(argv)
    torch.set_num_threads(args.threads)
    try:
        torch.set_num_interop_threads(1)
    except RuntimeError:
        pass
    torch.manual_seed(args.seed)

    path = args.data if os.path.isabs(args.data) else os.path.join(REPO, args.data)
    with open(path, "rb") as f:
        data = torch.from_numpy(np.frombuffer(f.read(), dtype=np.uint8).astype(np.int64))
    T, B = args.seg_len, args.batch
    if data.numel() < T + 2:
        sys.exit("%s: %d bytes, need more than seq_len + 1 = %d" % (path, data.numel(), T + 1))

    cfg = lm_ref.LMConfig(n_layer=args.layers, d_model=args.dim, n_head=args.heads, d_ff=args.ffn,
                          seq_len=T, norm=args.norm, activation=args.activation, tied=bool(args.tied),
                          dropout=args.dropout)
    gen = torch.Generator().manual_seed(args.seed)
    model = lm_ref.LM(cfg, attn_impl=args.attn, dtype=torch.float32)
    model.init_weights(generator=gen)
    model.train(True)

    decay = [p for p in model.parameters() if p.dim() >= 2]
    no_decay = [p for p in model.parameters() if p.dim() < 2]
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": args.weight_decay},
                             {"params": no_decay, "weight_decay": 0.0}],
                            lr=args.lr, betas=(0.9, 0.95), eps=1e-8)
    offsets = torch.arange(T + 1)

    def step():
        starts = torch.randint(0, data.numel() - T, (B,), generator=gen)
        win = data[starts[:, None] + offsets]          # [B, T+1]
        x, y = win[:, :T], win[:, 1:]
        loss = model.loss(x, y)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        if args.grad_clip > 0:
            torch.nn.utils.clip_grad_norm_(model.parameters(), args.grad_clip)
        opt.step()
        return loss.item()

    for _ in range(args.warmup_steps):
        step()
    times = []
    loss = float("nan")
    for _ in range(args.steps):
        t0 = time.perf_counter()
        loss = step()
        times.append(time.perf_counter() - t0)

    total = sum(times)
    out = {
        "impl": "pytorch", "torch": torch.__version__, "threads": torch.get_num_threads(),
        "layers": args.layers, "dim": args.dim, "heads": args.heads, "ffn": args.ffn,
        "seg_len": T, "batch": B, "steps": args.steps,
        "tokens_per_s": (B * T * args.steps / total) if total > 0 else None,
        "ms_per_step_median": 1000.0 * statistics.median(times) if times else None,
        "final_loss": loss,
        "warmup_steps": args.warmup_steps, "norm": args.norm, "activation": args.activation,
        "tied": args.tied, "dropout": args.dropout, "lr": args.lr,
        "attn": model.blocks[0].attn.attn_impl if args.layers else None,
        "params": sum(p.numel() for p in model.parameters()),
    }
    print(json.dumps(out))


if __name__ == "__main__":
    main()
