#!/bin/bash
# experiments/hibert-recipe-zen5/README.md, "The whole recipe on one machine": the shipped row's three stages in one run on an AMD
# EPYC Zen 5 (2 cores, AVX-512 with bf16), two threads each, to time the recipe: (a) IMDB train + validation
# reviews, 10,000 steps of 16, and (b) BBC train split, 1,000 steps of 8, both with sentence intruders (0.25,
# weight 1000), constant rate, bf16; (c) the greedy-label fine-tuning (1,200 steps of 8, word vectors at 3x the
# rate, seed 1337, fp32), then its test ROUGE. The same settings as experiments/hibert-ood10k/go.sh's ood10k row
# with greedy labels. Run from the repository root after `make`; as run, LONGCTX pointed at a copy of the build's
# longctx and the folder was /work/runs/s19/recipe. Run it again to continue a stopped stage.
THREADS=2 SHAPE="--sent-words 4096" MIN_LR=1e-3 OOD_STEPS=10000 OOD_BATCH=16 BBC_STEPS=1000 \
  FT_NAME=ft_ood_greedy FT_FLAGS="--lr-scale sent.words=3 --labels greedy" \
  bash bench/hibert_intruders.sh recipe_zen5 ood 0.25 1000
