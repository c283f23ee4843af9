#!/usr/bin/env bash
# The Reformer duplication task (Kitaev et al. 2020, Table 2) scaled to this CPU: trains 1-layer models
# with LSH attention of 1, 2 and 4 hash rounds (and full attention) on sequences 0 w 0 w and evaluates
# each with 1, 2, 4 and 8 rounds (and full attention). Writes one JSON line per trained model and per
# evaluation to experiments/reformer-duplication/bench_duplication.jsonl (or OUT); the training progress goes to build/bench/duplication.log.
# usage: bench/duplication.sh [THREADS] [OUT]     (extra flags for bench/duplication in DUP_FLAGS)
set -euo pipefail
cd "$(dirname "$0")/.."
threads=${1:-2}; out=${2:-experiments/reformer-duplication/bench_duplication.jsonl}
make -s build/release/bench/duplication
mkdir -p build/bench
export OMP_WAIT_POLICY=${OMP_WAIT_POLICY:-passive}
start=$(date +%s)
# shellcheck disable=SC2086
build/release/bench/duplication --threads "$threads" --hashes-train 1,2,4,full --attn-eval 1,2,4,8,full \
    --json ${DUP_FLAGS:-} > "$out" 2> >(tee build/bench/duplication.log >&2)
echo "wrote $out in $(( $(date +%s) - start )) s"
