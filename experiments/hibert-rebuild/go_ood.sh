#!/bin/bash
# the shipped row's IMDB stage (experiments/hibert-ood10k/go.sh), 10,000 steps of 16, one thread.
# Resume: longctx hibert pretrain --resume ood10k/ood.ckpt --out ood10k/ood.ckpt ... (same flags)
cd /work/main
LONGCTX=/work/runs/s14/longctx SHAPE="--sent-words 4096" MIN_LR=1e-3 OOD_STEPS=10000 OOD_BATCH=16 BBC_STEPS=1000 \
  FT_FLAGS="--lr-scale sent.words=3" bash bench/hibert_intruders.sh /work/runs/s14/ood10k ood 0.25 1000
