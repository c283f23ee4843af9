#!/bin/bash
# experiments/hibert-features/README.md, "Head features": the shipped model's greedy fine-tuning of the committed pre-trained weights
# (experiments/hibert-greedy/seeds/go.sh) with the head also reading each sentence's position, length and LexRank
# centrality (--head-features 3, longctx's extension), one fine-tuning per seed, chosen among by validation.
# Run from the repository root after `make`; LONGCTX names the binary (default ./longctx), THREADS its threads.
# FEATURES=4 adds the word-frequency feature (runs in fN-seedS/, the head features' weights at 10 x the rate: they
# start at 0 beside a head that learns from scratch); FEATURES=3 (default) is the first study's runs (seedS/).
# usage: [FEATURES=3|4] bash experiments/hibert-features/go.sh [SEED...]   (default: 1337 2 3)
set -e
bin=${LONGCTX:-./longctx}
for seed in ${@:-1337 2 3}; do
  features=${FEATURES:-3}; d=experiments/hibert-features/seed$seed; scale=sent.words=3
  [ "$features" = 3 ] || { d=experiments/hibert-features/f$features-seed$seed; scale=$scale,head.features=10; }
  mkdir -p $d
  args=(--data data/bbc-news-summary --max-sents 64 --steps 1200 --batch 8 --lr 1e-3 --warmup 50 --dropout 0
        --eval-every 100 --threads ${THREADS:-2} --precision fp32 --save-every-min 5 --json --lr-scale $scale
        --labels greedy --seed $seed --out $d/ft.ckpt --log $d/ft.jsonl)
  if [ -s $d/ft.ckpt.last ]; then
    /usr/bin/time -f "wall %e s" $bin hibert finetune --resume $d/ft.ckpt.last --log $d/ft.jsonl >>$d/ft.log 2>&1
  else
    /usr/bin/time -f "wall %e s" $bin hibert finetune --init experiments/hibert-rebuild/ood_bbc.safetensors \
        --head-features $features "${args[@]}" >>$d/ft.log 2>&1
  fi
  for split in valid test; do
    $bin eval --task summarize --data data/bbc-news-summary --split $split --ckpt $d/ft.ckpt --json --rouge stem \
        --threads ${THREADS:-2} >$d/eval_$split.txt
  done
done
