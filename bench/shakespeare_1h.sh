#!/usr/bin/env bash
# The best Tiny Shakespeare model an hour of this 2-core machine buys (issue 13, item 5): trains the
# recipe below, writes its per-step log, evaluates the whole validation split at the end (train does),
# and draws the loss and validation curves against elapsed time as an SVG with `longctx plot`.
#
#   bench/shakespeare_1h.sh [--bin ./longctx] [--threads N] [--out DIR] [--svg FILE] [-- EXTRA TRAIN FLAGS]
#
# The recipe: Transformer-XL, 6 layers of width 192, 6 heads, FFN 768, segments of 128 bytes with a
# memory of 128, dropout 0.1, bf16 products (fp32 on CPUs without AVX512_BF16, and slower), AdamW at
# lr 1.5e-3 with 200 warm-up steps and cosine decay to 1e-4 over 8,000 steps of 16 x 128 bytes (16.4M
# bytes, about 16 epochs of the 1,003,854 training bytes). The products, attention and dropout are built
# to give the same bits at any --threads, so more threads should only finish sooner. Default --out: shakespeare-1h/.
set -euo pipefail

bin=./longctx threads=0 out=shakespeare-1h svg=""
while [ $# -gt 0 ]; do
    case "$1" in
        --bin) bin=$2; shift 2 ;;
        --threads) threads=$2; shift 2 ;;
        --out) out=$2; shift 2 ;;
        --svg) svg=$2; shift 2 ;;
        --) shift; break ;;
        -h|--help) sed -n '2,12p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
        *) echo "shakespeare_1h.sh: unknown flag $1 (see --help)" >&2; exit 2 ;;
    esac
done
[ -x "$bin" ] || { echo "shakespeare_1h.sh: --bin $bin is not an executable (run make first)" >&2; exit 2; }
mkdir -p "$out"
svg=${svg:-$out/curve.svg}
log="$out/train.jsonl"
rm -f "$log"
"$bin" train --layers 6 --dim 192 --heads 6 --ffn 768 --seg-len 128 --mem-len 128 --dropout 0.1 \
    --lr 1.5e-3 --min-lr 1e-4 --warmup 200 --steps 8000 --batch 16 --eval-every 500 --precision bf16 \
    --threads "$threads" --save-every-min 5 --log "$log" --json --out "$out/model.ckpt" "$@" | tee "$out/train.out"
"$bin" plot "$log" --x time --out "$svg"
echo "shakespeare_1h.sh: curve in $svg, model in $out/model.ckpt"
