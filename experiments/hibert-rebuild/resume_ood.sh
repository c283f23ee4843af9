#!/bin/bash
# continue the IMDB stage of go_ood.sh (saved every 5 min and on SIGTERM) toward 10,000 steps.
# usage: resume_ood.sh [THREADS]
cd /work/runs/s14/ood10k
/usr/bin/time -f "ood resume: wall %e s, max RSS %M KB" /work/runs/s14/longctx hibert pretrain --resume ood.ckpt --out ood.ckpt \
  --steps 10000 --eval-every 400 --threads ${1:-1} --save-every-min 5 --json --log ood.jsonl >>ood.log 2>&1
