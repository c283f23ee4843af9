#!/bin/bash
# finish the best row's chain (IMDB resume -> BBC 1000 -> fine-tune 1200 -> test ROUGE)
cd /work/main
LONGCTX=/work/runs/s14/longctx SHAPE="--sent-words 4096" MIN_LR=1e-3 OOD_STEPS=10000 OOD_BATCH=16 BBC_STEPS=1000 FT_FLAGS="--lr-scale sent.words=3" THREADS=${1:-2} bash bench/hibert_intruders.sh /work/runs/s14/ood10k ood 0.25 1000
