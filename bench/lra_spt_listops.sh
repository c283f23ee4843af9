#!/usr/bin/env bash
# Recipe for LRA's ListOps (experiments/lra-self-pretraining/README.md, "ListOps: the bracket depth"): the
# classifier reads the trees as LRA's input pipeline does (the words ( and ) dropped: --parens drop) with a
# learned embedding of each token's square-bracket depth (--bracket-depth 16, longctx's extension), and
# learns over a curriculum of tree lengths from the same generator:
#   listops_short  from scratch on short trees (`longctx listops --min-length 20 --max-length 200`, seed 11)
#   listops_mid    from it (--init: encoder, depth rows and head) on trees of 200-1,000 tokens (seed 13)
#   listops_ft     from that on LRA's training split (seed 1)
#   listops_ft_test, listops_ft_fresh, listops_ft_val: the test split (seed 3), a fresh split of 2,000 from
#                  another seed (99) and the whole validation split (seed 2)
# The stages pick their checkpoint on validation files of their own lengths (seeds 12, 14; listops_ft: --valid-n
# sequences spread over the validation split). With --parens drop the longest sequence has 1,998 tokens, so
# --max-len 2000 reads every one whole. Resumable: run the same command again after an interruption
# (bench/lra_spt_lib.sh).
#   --mode scratch: the same encoder trained on LRA's training split alone (batch 16, lr 1e-3, no curriculum) for
#   --scratch-steps steps (about the recipe's whole wall time): stages listops_scratch, listops_scratch_test/_fresh.
# usage: bench/lra_spt_listops.sh [--mode spt|scratch] [--work DIR] [--bin PATH] [--threads T]
#        [--short-steps N] [--mid-steps N] [--ft-steps N] [--scratch-steps N] [--valid-n N] [--layers N] [--dim N]
# (--mid-steps 0, --ft-steps 0: no such stage; the model is then the last stage's)
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/lra_spt_lib.sh
short_steps=16000; mid_steps=3000; ft_steps=1000; scratch_steps=3400; valid_n=500; layers=4; dim=64
spt_args lra_spt_listops.sh "$@"

gen() { [ -s "$W/$1" ] || "$BIN" listops --out "$W/$1" "${@:2}"; }
gen listops_train.tsv --n 96000 --seed 1
gen listops_val.tsv --n 2000 --seed 2
gen listops_test.tsv --n 2000 --seed 3
gen listops_fresh99.tsv --n 2000 --seed 99
gen listops_short_train.tsv --n 96000 --seed 11 --min-length 20 --max-length 200
gen listops_short_val.tsv --n 1000 --seed 12 --min-length 20 --max-length 200
gen listops_mid_train.tsv --n 64000 --seed 13 --min-length 200 --max-length 1000
gen listops_mid_val.tsv --n 500 --seed 14 --min-length 200 --max-length 1000
spt_spread "$W/listops_val.tsv" "$valid_n" "$W/listops_val_$valid_n.tsv"

# One encoder for every stage: --layers of width --dim (default 4 of 64; LRA: 6 of 512), full attention, [CLS] pooling.
shape=(--tokens words --parens drop --bracket-depth 16 --max-len 2000 --layers "$layers" --dim "$dim" --heads 4
       --ffn $((4 * dim)) --attn full --pool cls --weight-decay 0.01 --dropout 0.1 --min-lr 0.00001 --warmup 100)

if [ "$mode" = spt ]; then
    spt_cls listops_short "$short_steps" "$W/listops_short_train.tsv" "$W/listops_short_val.tsv" -- "${shape[@]}" \
        --batch 32 --lr 0.001 --eval-every 1000
    last=listops_short
    if [ "$mid_steps" -gt 0 ]; then
        spt_cls listops_mid "$mid_steps" "$W/listops_mid_train.tsv" "$W/listops_mid_val.tsv" -- "${shape[@]}" \
            --batch 16 --lr 0.0005 --eval-every 500 --init "$W/$last.safetensors"
        last=listops_mid
    fi
    if [ "$ft_steps" -gt 0 ]; then
        spt_cls listops_ft "$ft_steps" "$W/listops_train.tsv" "$W/listops_val_$valid_n.tsv" -- "${shape[@]}" \
            --batch 16 --lr 0.0003 --eval-every 500 --init "$W/$last.safetensors"
        last=listops_ft
    fi
    for s in test:listops_test fresh:listops_fresh99 val:listops_val; do
        spt_eval "${last}_${s%%:*}" "$W/$last.safetensors" "$W/${s#*:}.tsv"
    done
    spt_say "the model: $W/$last.safetensors; wall time of the training stages:" \
        "$(spt_wall listops_short listops_mid listops_ft) s; test: $(cat "$W/${last}_test.json");" \
        "fresh: $(cat "$W/${last}_fresh.json")"
else
    spt_cls listops_scratch "$scratch_steps" "$W/listops_train.tsv" "$W/listops_val_$valid_n.tsv" -- "${shape[@]}" \
        --batch 16 --lr 0.001 --eval-every 500
    for s in test:listops_test fresh:listops_fresh99; do
        spt_eval "listops_scratch_${s%%:*}" "$W/listops_scratch.safetensors" "$W/${s#*:}.tsv"
    done
    spt_say "wall time of training: $(spt_wall listops_scratch) s; test: $(cat "$W/listops_scratch_test.json")"
fi
