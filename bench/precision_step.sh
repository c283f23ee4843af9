#!/usr/bin/env bash
# Training-step time with fp32 products against bf16 products (--precision bf16), side by side: ROUNDS
# rounds, each timing `longctx bench train` at fp32 then at bf16 on the same shape, so a machine that
# gets busier slows both; prints each run's JSON line and the median ratio fp32 / bf16 of wall and of
# CPU milliseconds per step. Two shapes by default: the main job's (small preset, vanilla) and the
# issue's larger one (8 layers, dim 512, ffn 2048, 256 tokens, batch 8).
#
#   bench/precision_step.sh [--bin ./longctx] [--threads 1] [--rounds 5] [--steps 5] [--shape default|large|both]
#
# On a CPU without AVX512_BF16 both runs take fp32 products (the bf16 line says "fp32").
set -euo pipefail

bin=./longctx threads=1 rounds=5 steps=5 shape=both
while [ $# -gt 0 ]; do
    case "$1" in
        --bin) bin=$2; shift 2 ;;
        --threads) threads=$2; shift 2 ;;
        --rounds) rounds=$2; shift 2 ;;
        --steps) steps=$2; shift 2 ;;
        --shape) shape=$2; shift 2 ;;
        -h|--help) sed -n '2,10p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
        *) echo "precision_step.sh: unknown flag $1 (see --help)" >&2; exit 2 ;;
    esac
done
[ -x "$bin" ] || { echo "precision_step.sh: --bin $bin is not an executable (run make first)" >&2; exit 2; }
case "$shape" in
    default) shapes=(default) ;; large) shapes=(large) ;; both) shapes=(default large) ;;
    *) echo "precision_step.sh: --shape must be default, large or both" >&2; exit 2 ;;
esac

flags() {
    case "$1" in
        default) echo "--model vanilla --batch 16" ;;
        large) echo "--model vanilla --layers 8 --dim 512 --heads 8 --ffn 2048 --seg-len 256 --batch 8" ;;
    esac
}

lines=$(mktemp)
trap 'rm -f "$lines"' EXIT
for s in "${shapes[@]}"; do
    for r in $(seq "$rounds"); do
        for p in fp32 bf16; do
            # shellcheck disable=SC2046
            line=$("$bin" bench train $(flags "$s") --precision "$p" --threads "$threads" --steps "$steps" --warmup 1 --json)
            echo "$line"
            echo "$s $p $line" >>"$lines"
        done
    done
done
/usr/bin/env python3 - "$lines" <<'EOF'
import json, statistics, sys
runs = {}
for raw in open(sys.argv[1]):
    shape, prec, line = raw.split(" ", 2)
    runs.setdefault(shape, {}).setdefault(prec, []).append(json.loads(line))
for shape, by in runs.items():
    fp, bf = by["fp32"], by["bf16"]
    wall = [a["ms_per_step_median"] / b["ms_per_step_median"] for a, b in zip(fp, bf)]
    cpu = [a["cpu_ms_per_step_median"] / b["cpu_ms_per_step_median"] for a, b in zip(fp, bf)]
    f = fp[0]
    print("%s (%d layers, dim %d, ffn %d, %d x %d, %d threads; bf16 products: %s): fp32 %.0f ms/step, bf16 %.0f "
          "ms/step (medians); fp32 / bf16 per round: wall %s, median %.2fx; CPU median %.2fx" %
          (shape, f["layers"], f["dim"], f["ffn"], f["batch"], f["seg_len"], f["threads"], bf[0]["precision"],
           statistics.median(a["ms_per_step_median"] for a in fp), statistics.median(b["ms_per_step_median"] for b in bf),
           " ".join("%.2f" % x for x in wall), statistics.median(wall), statistics.median(cpu)))
EOF
