#!/bin/bash
# experiments/hibert-greedy/README.md, "Four seeds of the greedy fine-tuning, and the in-domain row with greedy labels": the
# in-domain-only row of the ablation (BBC 3,000 steps of 8 from scratch with sentence intruders, the
# in-domain stage of experiments/hibert-ood10k/go.sh) fine-tuned with greedy labels (the recipe's 1,200
# steps of 8, word vectors at 3x the rate, seed 1337). Two threads. Run from the repository root after `make`;
# as run, LONGCTX pointed at a copy of the build's longctx and the folder was /work/runs/s19/indomain
# (AMD EPYC Zen 5: 15 min 24 s + 8 min 7 s). Run it again to continue a stopped stage.
THREADS=2 SHAPE="--sent-words 4096" MIN_LR=1e-3 BBC_STEPS=3000 \
  FT_NAME=ft_indomain_greedy FT_FLAGS="--lr-scale sent.words=3 --labels greedy" \
  bash bench/hibert_intruders.sh indomain_greedy indomain 0.25 1000
