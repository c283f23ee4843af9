#!/usr/bin/env bash
# Reformer and Linformer attention against length, beside full attention (issue 5): `longctx bench attn
# --json` (B = 1, 8 heads x 64, bidirectional as Linformer needs, forward + backward, median of REPS) for
# lsh with 1, 2 and 4 hash rounds (buckets 32, chunk 64), linformer with k = 128 and 256, and full
# attention up to 16K. Writes experiments/benchmarks/bench_lowrank.jsonl and prints the table of docs/results/speed-attention.md
# (time and memory per token, speed-up over full at the same length) via bench/lowrank_table.py.
# usage: bench/lowrank_scaling.sh [THREADS] [REPS]     defaults: 2 3
set -euo pipefail
cd "$(dirname "$0")/.."
threads=${1:-2}; reps=${2:-3}
lens=1024,4096,16384,65536
full_lens=1024,4096,16384
out=experiments/benchmarks/bench_lowrank.jsonl
kinds=(lsh:hashes=1 lsh:hashes=2 lsh:hashes=4 linformer:k=128 linformer:k=256 full)
unset OPENBLAS_CORETYPE OPENBLAS_L2_SIZE
make -s >/dev/null
tmp=$(mktemp)
trap 'rm -f "$tmp"' EXIT
for kind in "${kinds[@]}"; do
    l=$lens
    [ "$kind" = full ] && l=$full_lens
    case $kind in linformer*) l=$(echo "$l" | sed 's/,65536//');; esac # E, F are k x n parameters
    ./longctx bench attn --kind "$kind" --len "$l" --causal 0 --threads "$threads" --reps "$reps" --json | tee -a "$tmp"
done
cp "$tmp" "$out"
echo "wrote $out" >&2
/usr/bin/python3 bench/lowrank_table.py "$out"
