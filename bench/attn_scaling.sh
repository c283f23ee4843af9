#!/usr/bin/env bash
# Time and memory per token of every attention kind against sequence length: `longctx bench attn --json`
# (B = 1, 8 heads x 64, causal, forward + backward, median of REPS) for the sparse kinds at 2K..64K and
# full attention up to 16K (its time grows with T: 16K is ~20 s for 3 repetitions on 2 cores). Kinds the
# build does not have yet (bigbird, window with global tokens) are skipped with a note. Writes
# docs/bench_attn_scaling.jsonl, then draws docs/attn_scaling.svg and prints the summary table
# (bench/plot_attn.py).
# usage: bench/attn_scaling.sh [THREADS] [REPS]     defaults: 2 3
set -euo pipefail
cd "$(dirname "$0")/.."
threads=${1:-2}; reps=${2:-3}
sparse_lens=2048,4096,8192,16384,32768,65536
full_lens=2048,4096,8192,16384
out=docs/bench_attn_scaling.jsonl
kinds=(window:w=256 block:b=256 strided:s=256 compressed:w=256,s=64 window:w=256,global=2 bigbird:b=64,r=3 full)
unset OPENBLAS_CORETYPE OPENBLAS_L2_SIZE
make -s >/dev/null
tmp=$(mktemp)
trap 'rm -f "$tmp"' EXIT
for kind in "${kinds[@]}"; do
    lens=$sparse_lens
    [ "$kind" = full ] && lens=$full_lens
    if ! err=$(./longctx bench attn --kind "$kind" --len "$lens" --check 2>&1); then
        echo "note: $kind skipped: $err" >&2
        continue
    fi
    ./longctx bench attn --kind "$kind" --len "$lens" --threads "$threads" --reps "$reps" --json | tee -a "$tmp"
done
cp "$tmp" "$out"
echo "wrote $out" >&2
/usr/bin/python3 bench/plot_attn.py "$out" docs/attn_scaling.svg
