#!/bin/bash
# experiments/hibert-features/README.md, "Head features": the shipped model's greedy fine-tuning of the committed pre-trained weights
# (experiments/hibert-greedy/seeds/go.sh) with the head also reading each sentence's position, length and LexRank
# centrality (--head-features 3, longctx's extension), one fine-tuning per seed, chosen among by validation.
# Run from the repository root after `make`; LONGCTX names the binary (default ./longctx), THREADS its threads.
# usage: bash experiments/hibert-features/go.sh [SEED...]   (default: 1337 2 3)
set -e
bin=${LONGCTX:-./longctx}
for seed in ${@:-1337 2 3}; do
  d=experiments/hibert-features/seed$seed; mkdir -p $d
  args=(--data data/bbc-news-summary --max-sents 64 --steps 1200 --batch 8 --lr 1e-3 --warmup 50 --dropout 0
        --eval-every 100 --threads ${THREADS:-2} --precision fp32 --save-every-min 5 --json --lr-scale sent.words=3
        --labels greedy --seed $seed --out $d/ft.ckpt --log $d/ft.jsonl)
  if [ -s $d/ft.ckpt.last ]; then
    /usr/bin/time -f "wall %e s" $bin hibert finetune --resume $d/ft.ckpt.last --log $d/ft.jsonl >>$d/ft.log 2>&1
  else
    /usr/bin/time -f "wall %e s" $bin hibert finetune --init experiments/hibert-rebuild/ood_bbc.safetensors \
        --head-features 3 "${args[@]}" >>$d/ft.log 2>&1
  fi
  for split in valid test; do
    $bin eval --task summarize --data data/bbc-news-summary --split $split --ckpt $d/ft.ckpt --json --rouge stem \
        --threads ${THREADS:-2} >$d/eval_$split.txt
  done
done
