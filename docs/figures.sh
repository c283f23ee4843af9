#!/usr/bin/env bash
# Draws every figure under docs/ from committed data, with committed commands:
#   docs/figures/shakespeare_1h.svg  longctx plot of experiments/shakespeare-1h/train.jsonl (the hour's recipe, against time)
#   docs/figures/attn_scaling.svg    bench/plot_attn.py of experiments/benchmarks/bench_attn_scaling.jsonl (bench/attn_scaling.sh measures it)
#   docs/figures/*.svg       longctx plot of a tiny run's log, and attn-map of small models trained here (each kind
#                            of docs/guides/attention.md) on data/tinyshakespeare.txt: training is deterministic on a given
#                            machine, so the maps redraw the same there (another CPU may round differently)
# usage: docs/figures.sh [--bin ./longctx]     (19 min 20 s on a 2-core Zen 5 shared with other work, load average 25)
set -euo pipefail
cd "$(dirname "$0")/.."
bin=./longctx
[ "${1:-}" = --bin ] && bin=$2
[ -x "$bin" ] || { echo "figures.sh: $bin is not an executable (run make first)" >&2; exit 2; }
mkdir -p docs/figures
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

"$bin" plot experiments/shakespeare-1h/train.jsonl --x time --out docs/figures/shakespeare_1h.svg \
    --title "Tiny Shakespeare in an hour: bench/shakespeare_1h.sh, one thread of a Zen 4"
/usr/bin/python3 bench/plot_attn.py experiments/benchmarks/bench_attn_scaling.jsonl docs/figures/attn_scaling.svg >/dev/null

# a short run of the default model: the loss and validation curves of its --log
"$bin" train --preset tiny --steps 300 --eval-every 50 --threads 2 --log "$work/tiny.jsonl" --out "$work/tiny.ckpt" >/dev/null
"$bin" train --preset tiny --steps 300 --eval-every 50 --threads 2 --lr 3e-3 --log "$work/tiny_lr3e-3.jsonl" >/dev/null
cp "$work/tiny.jsonl" "$work/tiny_lr3e-3.jsonl" docs/figures/
"$bin" plot docs/figures/tiny.jsonl docs/figures/tiny_lr3e-3.jsonl --out docs/figures/plot_tiny.svg \
    --title "longctx train --preset tiny --steps 300, two learning rates"

# attention maps: one small vanilla model per pattern, 300 steps, then one head over the first 96 bytes of the play
text=data/tinyshakespeare.txt
map() { # map NAME SPEC [train flags...]
    local name=$1 spec=$2; shift 2
    "$bin" train --model vanilla --preset tiny --seg-len 128 --steps 300 --threads 2 --attn "$spec" "$@" \
        --out "$work/$name.ckpt" >/dev/null 2>&1
    "$bin" attn-map --ckpt "$work/$name.ckpt" --text "$text" --len 96 --layer 1 --head 0 \
        --out "docs/figures/attn_$name.svg" >/dev/null
}
map longformer window:w=16,global=2 --objective mlm
map dilated window:w=8,dil=3
map bigbird bigbird:b=8,r=2 --objective mlm
map strided strided:s=8
map lsh lsh:buckets=8,chunk=16
map routing routing:clusters=4
ls -l docs/figures/shakespeare_1h.svg docs/figures/attn_scaling.svg docs/figures/
