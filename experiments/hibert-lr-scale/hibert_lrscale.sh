#!/usr/bin/env bash
# HIBERT fine-tuning with per-tensor learning rates (experiments/hibert-lr-scale/README.md, "Slower encoders in fine-tuning"):
# stages (a) and (b) of experiments/hibert-recipe/hibert_recipe.sh in bf16, then fine-tuning from (b) with the pre-trained
# encoders slowed or frozen by --lr-scale, the head at the recipe's rate; same fine-tuning budget and
# settings as the recipe's ablation. Each fine-tuning's test ROUGE is printed at the end.
#   usage: experiments/hibert-lr-scale/hibert_lrscale.sh [DIR] [LR-SCALE ...]   (from the repository root, after `make`)
#   default LR-SCALE: "sent.=0.1,doc.=0.3"
set -euo pipefail
bin="$PWD/longctx"
data="$PWD/data"
dir=${1:-hibert-lrscale}
shift || true
scales=("$@")
[ ${#scales[@]} -gt 0 ] || scales=("sent.=0.1,doc.=0.3")
mkdir -p "$dir" && cd "$dir"
shape=(--max-sents 64)
pre=(--batch 8 --lr 1e-3 --threads 1 --precision bf16 --save-every-min 5 --json)
ft=(--data "$data/bbc-news-summary" "${shape[@]}" --steps 1200 --batch 8 --lr 1e-3 --warmup 50 --dropout 0
    --eval-every 100 --threads 1 --precision fp32 --save-every-min 5 --json)
timed() { local name=$1; shift; /usr/bin/time -f "$name: wall %e s, max RSS %M KB" "$@" >"$name.log" 2>&1; tail -n 1 "$name.log"; }

[ -s ood.ckpt ] || timed ood "$bin" hibert pretrain --docs "$data/imdb/train.tsv.gz" --docs "$data/imdb/val.tsv.gz" \
    "${shape[@]}" --steps 2400 --eval-every 400 --warmup 100 "${pre[@]}" --out ood.ckpt
[ -s ood_bbc.ckpt ] || timed ood_bbc "$bin" hibert pretrain --docs "$data/bbc-news-summary" --init ood.ckpt --steps 650 \
    --warmup 50 --eval-every 130 "${pre[@]}" --out ood_bbc.ckpt
for s in "${scales[@]}"; do
    name=ft_$(printf '%s' "$s" | tr -c 'A-Za-z0-9_.=-' '_')
    [ -s "$name.ckpt" ] || timed "$name" "$bin" hibert finetune --init ood_bbc.ckpt --lr-scale "$s" --out "$name.ckpt" "${ft[@]}"
    printf '%s test: ' "$name"
    "$bin" eval --task summarize --data "$data/bbc-news-summary" --split test --ckpt "$name.ckpt" --json | tail -n 1
done
