#!/bin/bash
# (the runs of experiments/lra-self-pretraining/README.md, "A depth curriculum"; the data: longctx listops, parentheses removed as LRA's input pipeline does)
# depth curriculum, LRA tokenization (no parentheses): d3 -> d4 -> short -> full
cd "${W:-lra-runs}"   # the work folder holding the TSV files
st() { n=$1; init=$2; shift 2; [ -s $n.done ] && return; nice -n 5 ./longctx-main train --task classify --tokens words --max-len 2000 --layers 4 --dim 64 --heads 4 --ffn 256 --attn full --pool cls --dropout 0.1 --weight-decay 0.01 --min-lr 0.00001 --warmup 100 --threads 1 --log $n.log --json --out $n.safetensors --init $init "$@" > $n.out 2> $n.err < /dev/null && cp $n.out $n.done; }
st c3 p2.safetensors --data d3_train.tsv --valid d3_val.tsv --batch 32 --lr 0.001 --steps 2000 --eval-every 250
st c4 c3.safetensors --data d4_train.tsv --valid d4_val.tsv --batch 32 --lr 0.0007 --steps 2000 --eval-every 250
st cs c4.safetensors --data np_listops_short_train.tsv --valid np_short_val1k.tsv --batch 32 --lr 0.0005 --steps 2000 --eval-every 250
st cf cs.safetensors --data np_listops_train.tsv --valid np_listops_val_500.tsv --batch 16 --lr 0.0003 --steps 1500 --eval-every 250 --save-every-min 10
