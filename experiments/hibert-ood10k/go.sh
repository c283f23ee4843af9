#!/bin/bash
# The runs of (experiments/hibert-ood10k/README.md, "Longer out-of-domain pre-training, faster word vectors");
# run from the repository root after `make`. As run: LONGCTX pointed at a copy of the build's longctx;
# the IMDB stage's first 4,000 steps are eos0_ablation's ood.ckpt (go_a.sh), continued to 10,000 with
# `longctx hibert pretrain --resume ood.ckpt --out ood10k.ckpt --steps 10000 --eval-every 1000 --threads 1
# --save-every-min 5 --json --log ood10k.jsonl` (the rate is constant, so this is the run of 10,000 at once);
# the in-domain row and the 4,000-step row fine-tuned eos0_ablation's bbc.ckpt and ood_bbc.ckpt.
w3="--lr-scale sent.words=3"
SHAPE="--sent-words 4096" FT_FLAGS="$w3" bash bench/hibert_intruders.sh ood10k/none none
SHAPE="--sent-words 4096" MIN_LR=1e-3 BBC_STEPS=3000 FT_FLAGS="$w3" bash bench/hibert_intruders.sh ood10k/indomain indomain 0.25 1000
SHAPE="--sent-words 4096" MIN_LR=1e-3 OOD_STEPS=4000 OOD_BATCH=16 BBC_STEPS=1000 FT_FLAGS="$w3" \
  bash bench/hibert_intruders.sh ood10k/ood4k ood 0.25 1000
SHAPE="--sent-words 4096" MIN_LR=1e-3 OOD_STEPS=10000 OOD_BATCH=16 BBC_STEPS=1000 FT_FLAGS="$w3" \
  bash bench/hibert_intruders.sh ood10k/ood10k ood 0.25 1000
# side runs from ood4k's ood_bbc.ckpt: FT_FLAGS="--lr-scale sent.words=10" (ft_w10), sent.words=0.1 (ft_w01,
# stopped after step 900), and --seed 1 with words at 3x (ft_w3_seed1); from ood10k's ood_bbc.ckpt, --seed 1 and
# --seed 2 (ft_ood10k_w3_seed1, _seed2); without pre-training, --seed 1 (ft_none_w3_seed1)
