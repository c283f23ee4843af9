#!/usr/bin/env bash
# Time and memory per token of every attention kind against sequence length: `longctx bench attn --json`
# (B = 1, 8 heads x 64, causal, forward + backward, median of REPS) for the sparse kinds at 2K..64K and
# full attention up to 16K (its time grows with T: 16K is ~20 s for 3 repetitions on 2 cores). Kinds the
# build does not have yet (bigbird, window with global tokens) are skipped with a note. Writes
# experiments/benchmarks/bench_attn_scaling.jsonl, then draws docs/figures/attn_scaling.svg and prints the summary table
# (bench/plot_attn.py). With KIND arguments only those kinds are measured again: their rows in
# experiments/benchmarks/bench_attn_scaling.jsonl are replaced, the other kinds' rows kept, and the figure redrawn.
# usage: bench/attn_scaling.sh [THREADS] [REPS] [KIND ...]     defaults: 2 3, every kind
set -euo pipefail
cd "$(dirname "$0")/.."
threads=${1:-2}; reps=${2:-3}
shift $(($# < 2 ? $# : 2))
sparse_lens=2048,4096,8192,16384,32768,65536
full_lens=2048,4096,8192,16384
out=experiments/benchmarks/bench_attn_scaling.jsonl
kinds=(window:w=256 block:b=256 strided:s=256 compressed:w=256,s=64 window:w=256,global=2 bigbird:b=64,r=3 full)
only=("$@")
[ ${#only[@]} -gt 0 ] && kinds=("${only[@]}")
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
if [ ${#only[@]} -gt 0 ]; then # keep the other kinds' rows, in their order, the new rows in place of the old
    /usr/bin/python3 - "$out" "$tmp" <<'PY'
import json, sys
old, new = sys.argv[1], sys.argv[2]
fresh = [json.loads(l) for l in open(new) if l.startswith("{")]
kinds = {r["kind"] for r in fresh}
rows, done = [], set()
for l in open(old):
    r = json.loads(l) if l.startswith("{") else None
    if r and r.get("kind") in kinds:
        if r["kind"] not in done:
            rows += [json.dumps(f, separators=(",", ":")) for f in fresh if f["kind"] == r["kind"]]
            done.add(r["kind"])
        continue
    rows.append(l.rstrip("\n"))
rows += [json.dumps(f, separators=(",", ":")) for f in fresh if f["kind"] not in done]
open(new, "w").write("\n".join(rows) + "\n")
PY
fi
cp "$tmp" "$out"
echo "wrote $out" >&2
/usr/bin/python3 bench/plot_attn.py "$out" docs/figures/attn_scaling.svg
