#!/usr/bin/env bash
# Self-pretraining recipe for LRA's ListOps (experiments/lra-self-pretraining/README.md), after Amos, Berant and Gupta,
# "Never Train from Scratch" (arXiv 2310.02980), with a curriculum over tree length:
#   listops_mlm    masked-token pre-training of the classifier's encoder on the training split's inputs
#                  (`train --task classify --objective mlm`, words: the classifier's own vocabulary)
#   listops_short  fine-tuning from it (--init) on shorter trees written by the same generator
#                  (`longctx listops --min-length 20 --max-length 200`, its own seed)
#   listops_ft     fine-tuning from that (--init: encoder and head) on the training split
#   listops_ft_test, listops_ft_fresh, listops_ft_val: the test split (seed 3), a fresh split of 2,000 from
#                  another seed (99) and the whole validation split (seed 2)
# Every sequence is read whole: --max-len 6000 (the longest printed sequence of the three splits has 5,995
# tokens; the project's default of 2,000 cuts 80% of them). Resumable: run the same command again after an
# interruption (bench/lra_spt_lib.sh).
#   --mode scratch: listops_ft's flags without --init and without the curriculum, for --scratch-steps steps
#   (the steps that fit the recipe's whole wall time): stages listops_scratch, listops_scratch_test/_fresh.
# usage: bench/lra_spt_listops.sh [--mode spt|scratch] [--work DIR] [--bin PATH] [--threads T]
#        [--mlm-steps N] [--short-steps N] [--ft-steps N] [--scratch-steps N] [--valid-n N]
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/lra_spt_lib.sh
mlm_steps=600; short_steps=3000; ft_steps=2000; scratch_steps=4000; valid_n=500
spt_args lra_spt_listops.sh "$@"

gen() { [ -s "$W/$1" ] || "$BIN" listops --out "$W/$1" "${@:2}"; }
gen listops_train.tsv --n 96000 --seed 1
gen listops_val.tsv --n 2000 --seed 2
gen listops_test.tsv --n 2000 --seed 3
gen listops_fresh99.tsv --n 2000 --seed 99
gen listops_short_train.tsv --n 96000 --seed 11 --min-length 20 --max-length 200
gen listops_short_val.tsv --n 1000 --seed 12 --min-length 20 --max-length 200
spt_spread "$W/listops_val.tsv" "$valid_n" "$W/listops_val_$valid_n.tsv"
spt_spread "$W/listops_val.tsv" 100 "$W/listops_val_100.tsv"   # masked-token accuracy: 100 sequences suffice

# One encoder for every stage: 4 layers of width 64 (LRA: 6 of 512), window attention with [CLS] global.
shape=(--tokens words --max-len 6000 --layers 4 --dim 64 --heads 4 --ffn 256 --attn window:w=64)
cls=(--pool cls --weight-decay 0.01 --dropout 0.1 --min-lr 0.00001 --warmup 100)

if [ "$mode" = spt ]; then
    spt_cls listops_mlm "$mlm_steps" "$W/listops_train.tsv" "$W/listops_val_100.tsv" -- "${shape[@]}" \
        --objective mlm --batch 8 --lr 0.001 --warmup 100 --weight-decay 0.01 --eval-every 250
    spt_cls listops_short "$short_steps" "$W/listops_short_train.tsv" "$W/listops_short_val.tsv" -- "${shape[@]}" \
        "${cls[@]}" --batch 32 --lr 0.0005 --eval-every 500 --init "$W/listops_mlm.safetensors"
    spt_cls listops_ft "$ft_steps" "$W/listops_train.tsv" "$W/listops_val_$valid_n.tsv" -- "${shape[@]}" "${cls[@]}" \
        --batch 16 --lr 0.0003 --eval-every 250 --init "$W/listops_short.safetensors"
    for s in test:listops_test fresh:listops_fresh99 val:listops_val; do
        spt_eval "listops_ft_${s%%:*}" "$W/listops_ft.safetensors" "$W/${s#*:}.tsv"
    done
    spt_say "wall time of the training stages: $(spt_wall listops_mlm listops_short listops_ft) s;" \
        "test: $(cat "$W/listops_ft_test.json"); fresh: $(cat "$W/listops_ft_fresh.json")"
else
    spt_cls listops_scratch "$scratch_steps" "$W/listops_train.tsv" "$W/listops_val_$valid_n.tsv" -- "${shape[@]}" \
        "${cls[@]}" --batch 16 --lr 0.001 --eval-every 250
    for s in test:listops_test fresh:listops_fresh99; do
        spt_eval "listops_scratch_${s%%:*}" "$W/listops_scratch.safetensors" "$W/${s#*:}.tsv"
    done
    spt_say "wall time of training: $(spt_wall listops_scratch) s; test: $(cat "$W/listops_scratch_test.json")"
fi
