#!/usr/bin/env bash
# Self-pretraining recipe for LRA's Text task (byte-level IMDB; experiments/lra-self-pretraining/README.md), after
# Amos, Berant and Gupta, "Never Train from Scratch" (arXiv 2310.02980): a byte-level language model on the
# training reviews only (the 20,000 texts of data/imdb/train.tsv.gz, shuffled with a fixed seed, one per
# line), causal (--objective clm, the default: it learns far faster per step here) or masked (--objective mlm),
# then the classifier fine-tuned from it with --init, then the test split scored. Resumable: run the
# same command again after an interruption and every stage continues where it stopped (bench/lra_spt_lib.sh).
#   --mode spt      (default) the recipe: stages text_clm (or text_mlm), text_ft, text_ft_test
#   --mode scratch  the same classifier and fine-tuning flags without --init, for --scratch-steps steps
#                   (give the steps that fit the recipe's whole wall time: the from-scratch row at the same
#                   budget): stages text_scratch, text_scratch_test
# Writes WORK/*.log (one JSON line per step), *.err, *.done, *.json (test accuracy) and the checkpoints.
# usage: bench/lra_spt_text.sh [--mode spt|scratch] [--work DIR] [--bin PATH] [--threads T]
#        [--objective clm|mlm] [--pre-steps N] [--ft-steps N] [--scratch-steps N] [--valid-n N]
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/lra_spt_lib.sh
objective=clm; pre_steps=24000; ft_steps=6000; scratch_steps=12000; valid_n=1000
spt_args lra_spt_text.sh "$@"

case $objective in clm|mlm) ;; *) echo "lra_spt_text.sh: error: --objective must be clm or mlm" >&2; exit 2 ;; esac
# The encoder both stages share: 2 layers of width 64 with window attention (w=16) and mean pooling, the
# shape of the best measured rows (experiments/lra-self-pretraining; 4 x 128 and 4 x 64 fine-tuned slower at
# this budget), positions for 1,024 bytes (the classifier's --max-len + 1 <= the language model's --seg-len,
# so every position the classifier reads is pre-trained). The defaults are the run of
# models/text-best.safetensors (75.58% on test): 24,000 language-model steps (33 min on one Zen 5 core), then
# 6,000 steps of fine-tuning (33 min); that run chose its checkpoint on 500 validation reviews, the script on
# --valid-n spread over the validation split. Fewer steps of either stage score less (63.53% after 2,000 + 2,000,
# 71.56% after 24,000 + 2,000).
shape=(--layers 2 --dim 64 --heads 4 --ffn 256 --attn window:w=16)
ft=(--tokens bytes --max-len 1000 --pool mean --batch 32 --lr 0.0005 --min-lr 0.00001 --warmup 100
    --weight-decay 0.01 --dropout 0.1 --eval-every 500 --precision bf16)

if [ ! -s "$W/imdb_train.txt" ]; then   # the training reviews' texts only, one per line, shuffled (seed 1)
    zcat data/imdb/train.tsv.gz | tail -n +2 | cut -f4 | shuf --random-source=<(yes 1) >"$W/imdb_train.txt.tmp"
    mv "$W/imdb_train.txt.tmp" "$W/imdb_train.txt"
fi
spt_spread data/imdb/val.tsv.gz "$valid_n" "$W/imdb_val_$valid_n.tsv"

if [ "$mode" = spt ]; then
    if [ "$objective" = clm ]; then
        spt_lm text_clm "$pre_steps" -- --objective clm --model vanilla --data imdb_train.txt "${shape[@]}" \
            --seg-len 1024 --batch 8 --lr 0.002 --min-lr 0.0001 --warmup 100 --dropout 0 --eval-every 4000 \
            --eval-bytes 32768 --precision bf16
    else
        spt_lm text_mlm "$pre_steps" -- --objective mlm --model vanilla --data imdb_train.txt "${shape[@]}" \
            --seg-len 4096 --batch 4 --lr 0.001 --warmup 100 --eval-every 250 --eval-bytes 32768 --precision bf16
    fi
    spt_cls text_ft "$ft_steps" data/imdb/train.tsv.gz "$W/imdb_val_$valid_n.tsv" -- "${shape[@]}" "${ft[@]}" \
        --init "$W/text_$objective.ckpt"
    spt_eval text_ft_test "$W/text_ft.safetensors" data/imdb/test.tsv.gz
    spt_say "wall time of the training stages: $(spt_wall "text_$objective" text_ft) s; test: $(cat "$W/text_ft_test.json")"
else
    spt_cls text_scratch "$scratch_steps" data/imdb/train.tsv.gz "$W/imdb_val_$valid_n.tsv" -- "${shape[@]}" "${ft[@]}"
    spt_eval text_scratch_test "$W/text_scratch.safetensors" data/imdb/test.tsv.gz
    spt_say "wall time of training: $(spt_wall text_scratch) s; test: $(cat "$W/text_scratch_test.json")"
fi
