#!/bin/bash
# usage: evalavg.sh SPLIT NAME CKPT... : average the checkpoints (avg.py) and score the mean on SPLIT

split=$1; name=$2; shift 2
/usr/bin/python3 /work/runs/s14/avg.py /tmp/avg_$name.ckpt "$@"
r=$(OMP_NUM_THREADS=1 /work/runs/s14/longctx eval --task summarize --data /work/main/data/bbc-news-summary --split $split --ckpt /tmp/avg_$name.ckpt --json | tail -1)
echo "$name $split $r"
rm -f /tmp/avg_$name.ckpt
