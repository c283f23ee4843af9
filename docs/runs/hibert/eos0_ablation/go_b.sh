#!/bin/bash
# core B: none, then in-domain only
cd /work/main
LONGCTX=/work/runs/s11/longctx SHAPE="--sent-words 4096" bash bench/hibert_intruders.sh /work/runs/s11/b none
LONGCTX=/work/runs/s11/longctx SHAPE="--sent-words 4096" MIN_LR=1e-3 BBC_STEPS=3000 \
  bash bench/hibert_intruders.sh /work/runs/s11/b indomain 0.25 1000
