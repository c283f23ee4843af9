#!/usr/bin/env bash
# Peak training memory against depth, reversible vs ordinary layers (Reformer's memory claim).
# For each depth and layer type: one training step of a vanilla model (dim 128, 4 heads, ffn 512,
# window attention w=128, one sequence of --len bytes), peak resident memory from /usr/bin/time, plus the
# model's own planned parameter and activation bytes. Writes JSON lines to experiments/benchmarks/bench_reversible.jsonl.
# Usage: bench/reversible_memory.sh [len (default 16384)] [depths (default "1 2 4 8 12")]
set -euo pipefail
cd "$(dirname "$0")/.."
len=${1:-16384}
depths=${2:-"1 2 4 8 12"}
make -s all
out=experiments/benchmarks/bench_reversible.jsonl
: >"$out"
for d in $depths; do
    for rev in 0 1; do
        flags=(--model vanilla --attn window:w=128 --layers "$d" --dim 128 --heads 4 --ffn 512 --seg-len "$len"
               --batch 1 --steps 1 --warmup 0 --ffn-chunk 4096 --json)
        [ "$rev" = 1 ] && flags+=(--reversible)
        log=$(mktemp)
        /usr/bin/time -v ./longctx bench train "${flags[@]}" >"$log" 2>&1
        rss_kb=$(grep "Maximum resident set size" "$log" | awk '{print $NF}')
        json=$(grep '^{"bench":"train"' "$log")
        rm -f "$log"
        echo "${json%\}},\"peak_rss_bytes\":$((rss_kb * 1024))}" | tee -a "$out"
    done
done
