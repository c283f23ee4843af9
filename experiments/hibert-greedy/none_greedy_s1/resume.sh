#!/bin/bash
# go.sh stopped at step 319 (SIGTERM, saved) and continued on 2 threads
cd /work/runs/s17/none_greedy_s1
/work/runs/s14/longctx hibert finetune --resume ft.ckpt.last --out ft.ckpt --threads 2 --json --log ft.jsonl >> ft.log 2>&1
/work/runs/s14/longctx eval --task summarize --data /work/main/data/bbc-news-summary --split test --ckpt ft.ckpt --json > test.txt 2>&1
