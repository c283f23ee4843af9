#!/usr/bin/env bash
# HIBERT pre-training with sentence intruders beside the masked sentences (experiments/hibert-intruders/README.md, "Sentence
# intruders"): the recipe's stages with --intruders, then the recipe's fine-tuning (same budget and settings
# as its ablation), and each fine-tuned model's test ROUGE.
#   usage: bench/hibert_intruders.sh [DIR] [ood|indomain|none] [RATE] [WEIGHT]   (from the repository root, after `make`)
#   ood: (a) IMDB then (b) BBC, both with intruders; indomain: (b') BBC alone from scratch with intruders;
#   none: the fine-tuning alone, from scratch.
#   Stage lengths (defaults: the recipe's): OOD_STEPS=2400 OOD_BATCH=8 BBC_STEPS=650 BBC_BATCH=8.
#   MIN_LR: the pre-training's final rate (default: the CLI's cosine decay); MIN_LR=1e-3 keeps it constant.
#   THREADS: threads of every stage (default 1: the recipe runs two rows side by side on 2 cores).
#   FT_FLAGS: more fine-tuning flags, e.g. FT_FLAGS="--lr-scale sent.words=3" (the word vectors at 3x the rate).
#   FT_NAME: the fine-tuning's name (its files FT_NAME.ckpt, .log, .jsonl; default ft_CHAIN), so that one
#   pre-training can be fine-tuned more than one way, e.g. FT_NAME=ft_ood_greedy FT_FLAGS="--labels greedy".
#   SHAPE: more shape flags for the new models, e.g. SHAPE="--sent-words 4096" (experiments/hibert-words/README.md, "Hashed word
#   vectors"); the stages that start from a checkpoint keep its shape.
#   Stopped (a signal, the end of a session)? Run the same command again: each unfinished stage continues
#   from its last save (every 5 minutes, and on SIGINT/SIGTERM) and finished ones are skipped.
set -euo pipefail
bin=${LONGCTX:-$PWD/longctx}
data="$PWD/data"
dir=${1:-hibert-intruders}
chain=${2:-ood}
rate=${3:-0.25}
weight=${4:-1}
ood_steps=${OOD_STEPS:-2400}
ood_batch=${OOD_BATCH:-8}
bbc_steps=${BBC_STEPS:-650}
bbc_batch=${BBC_BATCH:-8}
threads=${THREADS:-1}
mkdir -p "$dir" && cd "$dir"
shape=(--max-sents 64 ${SHAPE:-})
pre=(--lr 1e-3 ${MIN_LR:+--min-lr "$MIN_LR"} --threads "$threads" --precision bf16 --save-every-min 5 --intruders "$rate" --intruder-weight "$weight" --json)
ft=(--data "$data/bbc-news-summary" "${shape[@]}" --steps 1200 --batch 8 --lr 1e-3 --warmup 50 --dropout 0
    --eval-every 100 --threads "$threads" --precision fp32 --save-every-min 5 --json ${FT_FLAGS:-})
timed() {   # timed NAME CMD...: append CMD's output and its wall time to NAME.log; CMD's exit status
    local name=$1 rc=0; shift
    /usr/bin/time -f "$name: wall %e s, max RSS %M KB" "$@" >>"$name.log" 2>&1 || rc=$?
    tail -n 1 "$name.log"
    return $rc
}
# stage NAME STATE hibert-command...: run a stage once; NAME.done marks it finished. A stage stopped before
# that (a signal, a crash, the end of a session) left its last state in STATE (the pre-training's --out,
# the fine-tuning's OUT.last): running the script again continues it with --resume in place of --init; the
# run's own settings come from its checkpoint, and --steps may raise its length.
stage() {
    local name=$1 state=$2 a skip=0 args=(); shift 2
    [ -e "$name.done" ] && return 0
    if [ -s "$state" ]; then
        for a in "$@"; do
            if ((skip)); then skip=0; continue; fi
            if [ "$a" = --init ]; then skip=1; continue; fi
            args+=("$a")
        done
        args+=(--resume "$state")
    else
        args=("$@")
    fi
    timed "$name" "$bin" hibert "${args[@]}"
    touch "$name.done"
}

case $chain in
ood)
    stage ood ood.ckpt pretrain --docs "$data/imdb/train.tsv.gz" --docs "$data/imdb/val.tsv.gz" \
        "${shape[@]}" --steps "$ood_steps" --batch "$ood_batch" --eval-every 400 --warmup 100 "${pre[@]}" --out ood.ckpt --log ood.jsonl
    stage ood_bbc ood_bbc.ckpt pretrain --docs "$data/bbc-news-summary" --init ood.ckpt --steps "$bbc_steps" \
        --batch "$bbc_batch" --warmup 50 --eval-every 130 "${pre[@]}" --out ood_bbc.ckpt --log ood_bbc.jsonl
    init=ood_bbc.ckpt ;;
indomain)
    stage bbc bbc.ckpt pretrain --docs "$data/bbc-news-summary" "${shape[@]}" --steps "$bbc_steps" \
        --batch "$bbc_batch" --warmup 50 --eval-every 130 "${pre[@]}" --out bbc.ckpt --log bbc.jsonl
    init=bbc.ckpt ;;
none) init= ;;
*) echo "chain must be ood, indomain or none" >&2; exit 2 ;;
esac
name=${FT_NAME:-ft_$chain}
stage "$name" "$name.ckpt.last" finetune ${init:+--init "$init"} --out "$name.ckpt" "${ft[@]}" --log "$name.jsonl"
printf '%s test: ' "$name"
"$bin" eval --task summarize --data "$data/bbc-news-summary" --split test --ckpt "$name.ckpt" --json | tail -n 1
