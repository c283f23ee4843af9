#!/usr/bin/env bash
# HIBERT pre-training with sentence intruders beside the masked sentences (docs/hibert.md, "Sentence
# intruders"): the recipe's stages with --intruders, then the recipe's fine-tuning (same budget and settings
# as its ablation), and each fine-tuned model's test ROUGE.
#   usage: bench/hibert_intruders.sh [DIR] [ood|indomain|none] [RATE] [WEIGHT]   (from the repository root, after `make`)
#   ood: (a) IMDB then (b) BBC, both with intruders; indomain: (b') BBC alone from scratch with intruders;
#   none: the fine-tuning alone, from scratch.
#   Stage lengths (defaults: the recipe's): OOD_STEPS=2400 OOD_BATCH=8 BBC_STEPS=650 BBC_BATCH=8.
#   MIN_LR: the pre-training's final rate (default: the CLI's cosine decay); MIN_LR=1e-3 keeps it constant.
#   FT_FLAGS: more fine-tuning flags, e.g. FT_FLAGS="--lr-scale sent.words=3" (the word vectors at 3x the rate).
#   SHAPE: more shape flags for the new models, e.g. SHAPE="--sent-words 4096" (docs/hibert.md, "Hashed word
#   vectors"); the stages that start from a checkpoint keep its shape.
set -euo pipefail
bin=${LONGCTX:-$PWD/longctx}
data="$PWD/data"
dir=${1:-hibert-intruders}
chain=${2:-ood}
rate=${3:-0.25}
weight=${4:-1}
ood_steps=${OOD_STEPS:-2400}
ood_batch=${OOD_BATCH:-8}
bbc_steps=${BBC_STEPS:-650}
bbc_batch=${BBC_BATCH:-8}
mkdir -p "$dir" && cd "$dir"
shape=(--max-sents 64 ${SHAPE:-})
pre=(--lr 1e-3 ${MIN_LR:+--min-lr "$MIN_LR"} --threads 1 --precision bf16 --save-every-min 5 --intruders "$rate" --intruder-weight "$weight" --json)
ft=(--data "$data/bbc-news-summary" "${shape[@]}" --steps 1200 --batch 8 --lr 1e-3 --warmup 50 --dropout 0
    --eval-every 100 --threads 1 --precision fp32 --save-every-min 5 --json ${FT_FLAGS:-})
timed() { local name=$1; shift; /usr/bin/time -f "$name: wall %e s, max RSS %M KB" "$@" >"$name.log" 2>&1; tail -n 1 "$name.log"; }

case $chain in
ood)
    [ -s ood.ckpt ] || timed ood "$bin" hibert pretrain --docs "$data/imdb/train.tsv.gz" --docs "$data/imdb/val.tsv.gz" \
        "${shape[@]}" --steps "$ood_steps" --batch "$ood_batch" --eval-every 400 --warmup 100 "${pre[@]}" --out ood.ckpt --log ood.jsonl
    [ -s ood_bbc.ckpt ] || timed ood_bbc "$bin" hibert pretrain --docs "$data/bbc-news-summary" --init ood.ckpt --steps "$bbc_steps" \
        --batch "$bbc_batch" --warmup 50 --eval-every 130 "${pre[@]}" --out ood_bbc.ckpt --log ood_bbc.jsonl
    init=ood_bbc.ckpt ;;
indomain)
    [ -s bbc.ckpt ] || timed bbc "$bin" hibert pretrain --docs "$data/bbc-news-summary" "${shape[@]}" --steps "$bbc_steps" \
        --batch "$bbc_batch" --warmup 50 --eval-every 130 "${pre[@]}" --out bbc.ckpt --log bbc.jsonl
    init=bbc.ckpt ;;
none) init= ;;
*) echo "chain must be ood, indomain or none" >&2; exit 2 ;;
esac
[ -s "ft_$chain.ckpt" ] || timed "ft_$chain" "$bin" hibert finetune ${init:+--init "$init"} --out "ft_$chain.ckpt" "${ft[@]}" \
    --log "ft_$chain.jsonl"
printf 'ft_%s test: ' "$chain"
"$bin" eval --task summarize --data "$data/bbc-news-summary" --split test --ckpt "ft_$chain.ckpt" --json | tail -n 1
