#!/usr/bin/env bash
# The shipped HIBERT (models/hibert-bbc.safetensors) from scratch in one run: the pre-training of
# experiments/hibert-recipe-zen5 (a: IMDB train + validation reviews, 10,000 steps of 16; b: BBC train split,
# 1,000 steps of 8; both with sentence intruders, rate 0.25, weight 1000, constant rate 1e-3, bf16, hashed word
# vectors), then the fine-tuning of experiments/hibert-features (greedy labels, --head-features 4, word vectors
# at 3x and the head features at 10x the rate, 1,200 steps of 8, fp32) for each seed, the checkpoint of the
# best validation mean F1 kept per seed; the seed with the best validation mean F1 is exported, and its test
# ROUGE (plain and stemmed) is printed beside `eval --method lexrank` on the same split.
#   usage: bench/hibert_recipe.sh [DIR]   (from the repository root, after `make`; default DIR hibert-recipe)
#   THREADS: threads of every stage (default 2). SEEDS: the fine-tuning seeds (default "1337 2 3").
#   LONGCTX: the binary (default ./longctx; point it at a copy when rebuilding during a run).
#   Stopped (a signal, the end of a session)? Run the same command again: unfinished stages continue from their
#   last save (every 5 minutes, and on SIGINT/SIGTERM) and finished ones are skipped.
# Output in DIR: the stages' logs (ood.*, ood_bbc.*, ft_seedN.*), eval_SPLIT_seedN.txt, lexrank_test.txt,
# hibert-bbc.safetensors (the chosen seed's weights) and summary.txt (the scores and the wall time of this run).
set -euo pipefail
root=$PWD
bin=${LONGCTX:-$root/longctx}
dir=${1:-hibert-recipe}
seeds=${SEEDS:-1337 2 3}
threads=${THREADS:-2}
data=$root/data/bbc-news-summary
start=$(date +%s)
mkdir -p "$dir"
for seed in $seeds; do
    LONGCTX=$bin THREADS=$threads SHAPE="--sent-words 4096" MIN_LR=1e-3 OOD_STEPS=10000 OOD_BATCH=16 \
        BBC_STEPS=1000 FT_NAME=ft_seed$seed \
        FT_FLAGS="--head-features 4 --lr-scale sent.words=3,head.features=10 --labels greedy --seed $seed" \
        bash "$root/bench/hibert_intruders.sh" "$dir" ood 0.25 1000
done
cd "$dir"
best= best_f1=
for seed in $seeds; do
    for split in valid test; do
        [ -s "eval_${split}_seed$seed.txt" ] ||
            "$bin" eval --task summarize --data "$data" --split "$split" --ckpt "ft_seed$seed.ckpt" --json \
                --rouge stem --threads "$threads" >"eval_${split}_seed$seed.txt"
    done
    f1=$(tail -n 1 "eval_valid_seed$seed.txt" | sed -E 's/.*"rouge1":([0-9.]+),"rouge2":([0-9.]+),"rougeL":([0-9.]+).*/\1 \2 \3/' |
         awk '{ printf "%.6f", ($1 + $2 + $3) / 3 }')
    if [ -z "$best" ] || awk -v a="$f1" -v b="$best_f1" 'BEGIN { exit !(a > b) }'; then best=$seed best_f1=$f1; fi
done
"$bin" eval --task summarize --data "$data" --split test --method lexrank --json --rouge stem >lexrank_test.txt
"$bin" export --ckpt "ft_seed$best.ckpt" --out hibert-bbc.safetensors >/dev/null
{
    for seed in $seeds; do
        printf 'seed %s valid %s\n' "$seed" "$(tail -n 1 "eval_valid_seed$seed.txt")"
        printf 'seed %s test  %s\n' "$seed" "$(tail -n 1 "eval_test_seed$seed.txt")"
    done
    printf 'chosen by validation mean F1 (%s): seed %s, exported to %s/hibert-bbc.safetensors\n' "$best_f1" "$best" "$dir"
    printf 'lexrank test %s\n' "$(tail -n 1 lexrank_test.txt)"
    printf 'wall time of this run: %d s\n' $(($(date +%s) - start))
} | tee summary.txt
