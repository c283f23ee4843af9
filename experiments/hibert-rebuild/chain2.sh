#!/bin/bash
# finish the best row's pre-training (IMDB to 10,000, BBC 1,000), fine-tune it with the paper's greedy
# labels first (experiments/hibert-greedy/README.md "Greedy labels and long sentences"), then with the contained labels (the row as
# shipped); each prints its test ROUGE. Usage: chain2.sh [THREADS]
cd /work/main   # the script reads data/ from here; it runs a copy (s17) so that edits to bench/ do not touch a running chain
export LONGCTX=/work/runs/s14/longctx SHAPE="--sent-words 4096" MIN_LR=1e-3 OOD_STEPS=10000 OOD_BATCH=16 BBC_STEPS=1000 THREADS=${1:-2}
FT_NAME=ft_ood_greedy FT_FLAGS="--lr-scale sent.words=3 --labels greedy" bash /work/runs/s14/hibert_intruders.sh /work/runs/s14/ood10k ood 0.25 1000
FT_FLAGS="--lr-scale sent.words=3" bash /work/runs/s14/hibert_intruders.sh /work/runs/s14/ood10k ood 0.25 1000
