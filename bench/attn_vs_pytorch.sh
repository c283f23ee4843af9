#!/usr/bin/env bash
# Attention kinds of longctx against the same attention written the usual PyTorch way
# (bench/torch_attn.py: Hugging Face's Longformer chunked band + global, BigBird blocked gather, dense),
# forward + backward, B = 1, 8 heads x 64, causal, the same thread count on both sides. For each kind
# and length the two sides run back to back; every JSON line goes to experiments/benchmarks/bench_attn_torch.jsonl
# (longctx: "impl":"longctx", PyTorch: "impl":"pytorch"), followed by one summary line per pair
# ("bench":"attn_vs_pytorch", ratio = PyTorch ms / longctx ms, fwd + bwd).
# A kind the C side does not support yet (its spec fails to parse or check) is run on the PyTorch side
# only, with a "skipped" line for longctx; PyTorch cases that cannot fit (dense at 16K: ~34 GB) are skipped.
# usage: bench/attn_vs_pytorch.sh [THREADS] [REPS] [LENS]     defaults: 2 3 4096,16384
set -euo pipefail
cd "$(dirname "$0")/.."
threads=${1:-2}; reps=${2:-3}; lens=${3:-4096,16384}
out=experiments/benchmarks/bench_attn_torch.jsonl
kinds=(full window:w=256 window:w=256,global=2 bigbird:b=64,r=3)
unset OPENBLAS_CORETYPE OPENBLAS_L2_SIZE
make -s >/dev/null
tmp=$(mktemp)
trap 'rm -f "$tmp"' EXIT
for kind in "${kinds[@]}"; do
    c_ok=1
    if ! err=$(./longctx bench attn --kind "$kind" --len "$lens" --check 2>&1); then
        c_ok=0
        echo "note: longctx: $kind skipped: $err" >&2
    fi
    for len in ${lens//,/ }; do
        if [ $c_ok = 1 ]; then
            ./longctx bench attn --kind "$kind" --len "$len" --threads "$threads" --reps "$reps" --json | tee -a "$tmp"
        else
            /usr/bin/python3 -c 'import json,sys; print(json.dumps({"impl":"longctx","kind":sys.argv[1],"len":int(sys.argv[2]),"skipped":sys.argv[3]}))' \
                "$kind" "$len" "$err" | tee -a "$tmp"
        fi
        /usr/bin/python3 bench/torch_attn.py --kind "$kind" --len "$len" --threads "$threads" --reps "$reps" | tee -a "$tmp"
    done
done
/usr/bin/python3 - "$tmp" <<'PY' | tee -a "$tmp"
import json, sys
rows = [json.loads(line) for line in open(sys.argv[1]) if line.strip()]
done = {(r["impl"], r["kind"], r["len"]): r for r in rows if "fwd_ms" in r}
for (impl, kind, n), r in sorted(done.items(), key=lambda x: (x[0][1], x[0][2])):
    if impl != "longctx" or ("pytorch", kind, n) not in done:
        continue
    p = done[("pytorch", kind, n)]
    c_ms, p_ms = r["fwd_ms"] + r["bwd_ms"], p["fwd_ms"] + p["bwd_ms"]
    print(json.dumps({"bench": "attn_vs_pytorch", "kind": kind, "len": n, "threads": r["threads"],
                      "longctx_ms": round(c_ms, 2), "pytorch_ms": round(p_ms, 2), "ratio": round(p_ms / c_ms, 2),
                      "longctx_peak_bytes": r["peak_bytes"], "pytorch_peak_bytes": p["peak_bytes"]}))
PY
cp "$tmp" "$out"
echo "wrote $out" >&2
