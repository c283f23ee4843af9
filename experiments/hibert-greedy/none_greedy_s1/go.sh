#!/bin/bash
# the none row (no pre-training, words at 3x, seed 1) with the paper's greedy ROUGE-oracle labels
cd /work/runs/s17/none_greedy_s1
/work/runs/s14/longctx hibert finetune --out ft.ckpt --data /work/main/data/bbc-news-summary --max-sents 64 --sent-words 4096 \
  --steps 1200 --batch 8 --lr 1e-3 --warmup 50 --dropout 0 --eval-every 100 --threads 1 --precision fp32 \
  --json --lr-scale sent.words=3 --labels greedy --seed 1 --log ft.jsonl > ft.log 2>&1
/work/runs/s14/longctx eval --task summarize --data /work/main/data/bbc-news-summary --split test --ckpt ft.ckpt --json > test.txt 2>&1
