#!/usr/bin/env bash
# The longest sequence: one forward + backward (a training step) of a 2-layer window-attention model on
# a single sequence, with the peak resident memory from /usr/bin/time. Two settings:
#   262,144 bytes: dim 128, 8 heads, ffn 512, window w=256, ordinary layers;
#   1,048,576 bytes: dim 64, 4 heads, ffn 256, window w=128, reversible layers and chunked feed-forward.
# Writes JSON lines (bench train's fields plus peak_rss_bytes) to experiments/benchmarks/bench_longest.jsonl.
set -euo pipefail
cd "$(dirname "$0")/.."
make -s all
out=experiments/benchmarks/bench_longest.jsonl
: >"$out"
run() {
    log=$(mktemp)
    /usr/bin/time -v ./longctx bench train --model vanilla --layers 2 --batch 1 --steps 1 --warmup 0 --json "$@" >"$log" 2>&1
    rss_kb=$(grep "Maximum resident set size" "$log" | awk '{print $NF}')
    json=$(grep '^{"bench":"train"' "$log")
    rm -f "$log"
    echo "${json%\}},\"peak_rss_bytes\":$((rss_kb * 1024))}" | tee -a "$out"
}
run --seg-len 262144 --dim 128 --heads 8 --ffn 512 --attn window:w=256
run --seg-len 1048576 --dim 64 --heads 4 --ffn 256 --attn window:w=128 --reversible --ffn-chunk 8192
