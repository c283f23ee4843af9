#!/bin/bash
# s18: the model shipped in the eighteenth session (docs/hibert.md, "Greedy labels after pre-training"; since
# the nineteenth, its seed 4: ../seeds/go.sh): the best row's pre-training
# (IMDB 10,000 steps of 16 + BBC 1,000 of 8, docs/runs/hibert/rebuild/) fine-tuned with the paper's greedy
# ROUGE-oracle labels, the word vectors at 3x the rate, the recipe's 1,200 steps of 8, seed 1337, 2 threads.
# As run: docs/runs/hibert/rebuild/chain2.sh (its first fine-tuning, FT_NAME=ft_ood_greedy). The same from the
# committed weights after both stages, from the repository root after `make` (2 fine-tuning steps from them
# wrote the same bytes as from the full state on the machine that ran it):
set -e
mkdir -p ood_greedy
./longctx hibert finetune --data data/bbc-news-summary --init docs/runs/hibert/rebuild/ood_bbc.safetensors \
    --max-sents 64 --steps 1200 --batch 8 --lr 1e-3 --warmup 50 --dropout 0 --eval-every 100 --threads 2 \
    --precision fp32 --save-every-min 5 --json --lr-scale sent.words=3 --labels greedy \
    --out ood_greedy/ft.ckpt --log ood_greedy/ft.jsonl
./longctx eval --task summarize --data data/bbc-news-summary --split test --ckpt ood_greedy/ft.ckpt --json
