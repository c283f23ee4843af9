#!/bin/bash
# core A: out-of-domain + in-domain chain
cd /work/main
LONGCTX=/work/runs/s11/longctx SHAPE="--sent-words 4096" MIN_LR=1e-3 OOD_STEPS=4000 OOD_BATCH=16 BBC_STEPS=1000 \
  bash bench/hibert_intruders.sh /work/runs/s11/a ood 0.25 1000
