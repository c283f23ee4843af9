#!/usr/bin/env bash
# HIBERT's three stages and the pre-training ablation (experiments/hibert-recipe/README.md, "Results"), as run on 2026-12-01:
# every command one thread, two at a time on a 2-core machine. Stage (a): masked-sentence pre-training on
# the IMDB train + validation reviews (never its test reviews); (b) on the BBC train split, from (a) or
# from scratch; (c) fine-tuning for extraction, from (b), from BBC-only pre-training, or from scratch,
# with one budget for all three. Checkpoints and logs go to DIR (default hibert-runs/).
#   usage: experiments/hibert-recipe/hibert_recipe.sh [DIR]      (from the repository root, after `make`)
set -euo pipefail
bin="$PWD/longctx"
data="$PWD/data"
dir=${1:-hibert-runs}
mkdir -p "$dir" && cd "$dir"
shape=(--max-sents 64)
pre=(--batch 8 --lr 1e-3 --threads 1 --save-every-min 5 --json)
ft=(--data "$data/bbc-news-summary" "${shape[@]}" --steps 1200 --batch 8 --lr 1e-3 --warmup 50 --dropout 0
    --eval-every 100 --threads 1 --save-every-min 5 --json)
timed() { local name=$1; shift; /usr/bin/time -f "$name: wall %e s, max RSS %M KB" "$@" >"$name.log" 2>&1; tail -n 1 "$name.log"; }

chain_a() { # (a) IMDB, then (b) BBC from it, then (c) its fine-tuning
    timed ood "$bin" hibert pretrain --docs "$data/imdb/train.tsv.gz" --docs "$data/imdb/val.tsv.gz" "${shape[@]}" \
        --steps 2400 --eval-every 400 --warmup 100 "${pre[@]}" --out ood.ckpt
    timed ood_bbc "$bin" hibert pretrain --docs "$data/bbc-news-summary" --init ood.ckpt --steps 650 --warmup 50 --eval-every 130 \
        "${pre[@]}" --out ood_bbc.ckpt
    timed ft_full "$bin" hibert finetune --init ood_bbc.ckpt --out ft_full.ckpt "${ft[@]}"
}
chain_b() { # (b) BBC only, its fine-tuning, then fine-tuning without pre-training
    timed indomain "$bin" hibert pretrain --docs "$data/bbc-news-summary" "${shape[@]}" --steps 650 --warmup 50 --eval-every 130 \
        "${pre[@]}" --out indomain.ckpt
    timed ft_indomain "$bin" hibert finetune --init indomain.ckpt --out ft_indomain.ckpt "${ft[@]}"
    timed ft_none "$bin" hibert finetune --out ft_none.ckpt "${ft[@]}"
}
chain_a & chain_b & wait
for c in ft_none ft_indomain ft_full; do
    printf '%s test: ' "$c"
    "$bin" eval --task summarize --data "$data/bbc-news-summary" --split test --ckpt "$c.ckpt" --json | tail -n 1
done
