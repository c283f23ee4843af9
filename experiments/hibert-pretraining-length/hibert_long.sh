#!/usr/bin/env bash
# HIBERT with a longer out-of-domain pre-training (experiments/hibert-pretraining-length/README.md, "Longer pre-training"): stage (a) on the
# IMDB train + validation reviews for 16,000 steps in bf16 (the recipe's (a) is 2,400 steps in fp32), then
# the recipe's (b) and (c) unchanged (fp32): 650 steps on the BBC train split from it, 1,200 steps of
# fine-tuning, and the test split's ROUGE of the best checkpoint. One thread; a stopped run continues from
# its last save when started again (stage (a) resumes, (b) and (c) start over).
#   usage: experiments/hibert-pretraining-length/hibert_long.sh [DIR]      (from the repository root, after `make`; default DIR hibert-long/)
set -euo pipefail
bin="$PWD/longctx"
data="$PWD/data"
dir=${1:-hibert-long}
ood_steps=${OOD_STEPS:-16000}
mkdir -p "$dir" && cd "$dir"
pre=(--max-sents 64 --batch 8 --lr 1e-3 --threads 1 --save-every-min 5 --json)
timed() { local name=$1; shift; /usr/bin/time -f "$name: wall %e s, max RSS %M KB" "$@" >>"$name.log" 2>&1; tail -n 1 "$name.log"; }
if [ ! -e ood_long.done ]; then
    resume=()
    if [ -e ood_long.ckpt.last ] || [ -e ood_long.ckpt ]; then resume=(--resume ood_long.ckpt); fi
    timed ood_long "$bin" hibert pretrain "${resume[@]}" --docs "$data/imdb/train.tsv.gz" --docs "$data/imdb/val.tsv.gz" \
        --steps "$ood_steps" --eval-every 800 --warmup 100 --precision bf16 "${pre[@]}" --out ood_long.ckpt
    touch ood_long.done
fi
timed ood_long_bbc "$bin" hibert pretrain --docs "$data/bbc-news-summary" --init ood_long.ckpt --steps 650 --warmup 50 \
    --eval-every 130 --precision fp32 "${pre[@]}" --out ood_long_bbc.ckpt
timed ft_long "$bin" hibert finetune --init ood_long_bbc.ckpt --out ft_long.ckpt --data "$data/bbc-news-summary" \
    --max-sents 64 --steps 1200 --batch 8 --lr 1e-3 --warmup 50 --dropout 0 --eval-every 100 --threads 1 \
    --save-every-min 5 --precision fp32 --json
printf 'ft_long test: '
"$bin" eval --task summarize --data "$data/bbc-news-summary" --split test --ckpt ft_long.ckpt --json | tail -n 1
