#!/bin/bash
# none row (no pre-training), words at 3x, saving OUT.last every 100 steps; a watcher keeps each one.
cd /work/runs/s14/none
/work/runs/s14/longctx hibert finetune --out ft.ckpt --data /work/main/data/bbc-news-summary --max-sents 64 --sent-words 4096 \
  --steps 1200 --batch 8 --lr 1e-3 --warmup 50 --dropout 0 --eval-every 100 --threads 1 --precision fp32 --save-every 100 \
  --json --lr-scale sent.words=3 --log ft.jsonl > ft.log 2>&1 &
pid=$!
last=""
while kill -0 $pid 2>/dev/null; do
  if [ -f ft.ckpt.last ]; then m=$(stat -c %Y.%s ft.ckpt.last); if [ "$m" != "$last" ]; then
    s=$(tail -n 1 ft.jsonl | sed 's/.*"step":\([0-9]*\).*/\1/'); cp ft.ckpt.last snap_$s.ckpt; last=$m; fi; fi
  sleep 3
done
cp ft.ckpt.last snap_final.ckpt
