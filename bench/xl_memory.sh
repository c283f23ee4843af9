#!/usr/bin/env bash
# Effective use of memory: trains the default Transformer-XL and the vanilla model of the same shape
# with the same budget (steps, batch, segment length) on Tiny Shakespeare, then evaluates the XL model
# on the validation split with memory lengths 0, seg, 2 seg and 4 seg. One JSON line per evaluation.
# usage: bench/xl_memory.sh [STEPS] [OUTDIR]     (defaults: the main job's 2000 steps, build/bench)
set -euo pipefail
cd "$(dirname "$0")/.."
steps=${1:-2000}; out=${2:-build/bench}
mkdir -p "$out"
make -s >/dev/null
[ -f "$out/xl.ckpt" ] || ./longctx train --steps "$steps" --out "$out/xl.ckpt" --json | tail -1
[ -f "$out/vanilla.ckpt" ] || ./longctx train --model vanilla --steps "$steps" --out "$out/vanilla.ckpt" --json | tail -1
seg=128
for mem in 0 $seg $((2 * seg)) $((4 * seg)); do
    r=$(./longctx eval --ckpt "$out/xl.ckpt" --mem-len "$mem" --json | tail -1)
    echo "{\"model\":\"xl\",\"seg_len\":$seg,\"mem_len\":$mem,${r#\{}"
done
r=$(./longctx eval --ckpt "$out/vanilla.ckpt" --json | tail -1)
echo "{\"model\":\"vanilla\",\"seg_len\":$seg,\"mem_len\":0,${r#\{}"
