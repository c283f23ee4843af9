#!/usr/bin/env bash
# Data parallelism on one machine (docs/guides/distributed.md): training throughput of the default model
# (`longctx train` defaults: preset small, global batch 16) as 1 process x 2 threads and as 2 MPI processes
# x 1 thread x batch 8 (the same 16 streams), run alternately REPS times (side by side, so load from other
# jobs hits both alike), then bench_allreduce on 2 processes. JSON lines on stdout (one per run, then the
# allreduce sizes) and a summary of medians on stderr.
# usage: bench/data_parallel.sh [BUILD_DIR] [REPS] [STEPS]   (defaults build/release 5 40)
set -eu
build=${1:-build/release} reps=${2:-5} steps=${3:-40}
bin=$build/longctx
mpi=(mpirun --oversubscribe --allow-run-as-root)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cpu=$(lscpu | sed -n 's/^Model name: *//p' | head -1)
common=(--steps "$steps" --eval-every 0 --warmup 10)
one=() two=() comm=()
for r in $(seq "$reps"); do
    "$bin" train "${common[@]}" --batch 16 --threads 2 --json 2>/dev/null | tail -1 >"$tmp/one"
    "${mpi[@]}" -np 2 "$bin" train "${common[@]}" --batch 8 --threads 1 --json 2>/dev/null | tail -1 >"$tmp/two"
    for k in one two; do
        sed "s/^{/{\"bench\":\"data_parallel\",\"run\":\"$k\",\"rep\":$r,\"cpu\":\"$cpu\",/" "$tmp/$k"
    done
    one+=("$(grep -o '"tokens_per_s":[0-9.]*' "$tmp/one" | cut -d: -f2)")
    two+=("$(grep -o '"tokens_per_s":[0-9.]*' "$tmp/two" | cut -d: -f2)")
    comm+=("$(grep -o '"allreduce_s_per_step":[0-9.]*' "$tmp/two" | cut -d: -f2)")
done
"${mpi[@]}" -np 2 "$build/bench/bench_allreduce" | sed "s/^{/{\"cpu\":\"$cpu\",/"
median() { printf '%s\n' "$@" | sort -g | awk '{v[NR] = $1} END {print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2}'; }
m1=$(median "${one[@]}") m2=$(median "${two[@]}") mc=$(median "${comm[@]}")
{
    echo "CPU: $cpu; $reps alternating runs of $steps steps each"
    echo "1 process x 2 threads, batch 16:     median $m1 tokens/s (runs: ${one[*]})"
    echo "2 processes x 1 thread, batch 8 each: median $m2 tokens/s (runs: ${two[*]})"
    echo "ratio 2 processes / 1 process: $(awk -v a="$m2" -v b="$m1" 'BEGIN {printf "%.3f", a / b}')"
    echo "gradient allreduce per step (2 processes): median $(awk -v c="$mc" 'BEGIN {printf "%.3f", c * 1e3}') ms"
} >&2
