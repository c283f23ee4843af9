#!/usr/bin/env bash
# Training tokens/s of longctx's vanilla model against the PyTorch reference of the same model
# (bench/torch_train.py, tests/reference/lm_ref.py),
# on the same threads, side by side: the two alternate for ROUNDS rounds and the medians are compared.
# usage: bench/train_vs_pytorch.sh [THREADS] [ROUNDS] [-- extra model flags for both, e.g. --layers 4]
# LONGCTX_FLAGS="--precision bf16" adds flags to longctx's side only (PyTorch stays fp32);
# TORCH_THREADS=N runs PyTorch at N threads instead of THREADS (its best count: 1 on a 2-core machine).
# Needs Debian's python3-torch. OpenBLAS's core-type override is removed for this command only, so
# both sides use the AVX-512 kernels.
set -euo pipefail
cd "$(dirname "$0")/.."
threads=${1:-2}; rounds=${2:-3}; torch_threads=${TORCH_THREADS:-$threads}
shift $(( $# >= 2 ? 2 : $# )); [ "${1:-}" = "--" ] && shift
unset OPENBLAS_CORETYPE OPENBLAS_L2_SIZE
make -s >/dev/null
shape=(--layers 4 --dim 128 --heads 4 --ffn 512 --seg-len 128 --batch 16 "$@")
lc=() pt=()
for r in $(seq "$rounds"); do
    # shellcheck disable=SC2086
    lc+=("$(./longctx bench train --model vanilla "${shape[@]}" ${LONGCTX_FLAGS:-} --steps 10 --warmup 2 --threads "$threads" --json | tail -1)")
    pt+=("$(/usr/bin/python3 bench/torch_train.py "${shape[@]}" --steps 10 --warmup-steps 2 --threads "$torch_threads" | tail -1)")
done
printf '%s\n' "${lc[@]}" "${pt[@]}"
/usr/bin/python3 - "$threads" "$torch_threads" "${lc[@]}" "${pt[@]}" <<'PY'
import json, statistics, sys
threads, torch_threads = int(sys.argv[1]), int(sys.argv[2]); rows = [json.loads(x) for x in sys.argv[3:]]
lc = [r["tokens_per_s"] for r in rows if r["impl"] == "longctx"]
pt = [r["tokens_per_s"] for r in rows if r["impl"] == "pytorch"]
m_lc, m_pt = statistics.median(lc), statistics.median(pt)
print(json.dumps({"bench": "train_vs_pytorch", "threads": threads, "pytorch_threads": torch_threads, "longctx_tokens_per_s": round(m_lc, 1),
                  "pytorch_tokens_per_s": round(m_pt, 1), "ratio": round(m_lc / m_pt, 2), "rounds": len(lc)}))
PY
