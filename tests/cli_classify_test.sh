#!/usr/bin/env bash
# CLI tests of sequence classification (docs/lra.md): `train --task classify`, `eval --task classify` and
# `predict` on tiny files and a tiny model: bad inputs (a TSV with a missing column, an empty file, --max-len 0,
# a checkpoint of another model) fail with one line naming the file or flag; a label never seen in training
# is counted wrong with a warning; eval's last stdout line is the JSON; predict prints one label per line.
# usage: tests/cli_classify_test.sh path/to/longctx
set -u
bin=$1
cli_one_line_errors=1
source "$(dirname "${BASH_SOURCE[0]}")/cli_lib.sh"

printf 'label\ttext\n' >"$tmp/train.tsv"
for i in $(seq 1 24); do printf 'pos\tgood fine great %d good\nneg\tbad awful poor %d bad\n' "$i" "$i"; done >>"$tmp/train.tsv"
head -9 "$tmp/train.tsv" >"$tmp/valid.tsv"
printf 'label\n' >"$tmp/nocol.tsv"
printf 'pos\tgood\n' >>"$tmp/nocol.tsv"
: >"$tmp/empty.tsv"
tiny=(--layers 1 --dim 16 --heads 2 --ffn 32 --max-len 32 --batch 8 --steps 60 --warmup 5 --eval-every 20 --lr 0.003 --threads 1)
tr=("$bin" train --task classify --data "$tmp/train.tsv" --valid "$tmp/valid.tsv")

expect 2 "max-len must be in 1\.\.1048576, got 0" -- "${tr[@]}" "${tiny[@]}" --max-len 0 --out "$tmp/c.st"
expect 2 "--out is required" -- "${tr[@]}" "${tiny[@]}"
expect 2 "--valid is required" -- "$bin" train --task classify --data "$tmp/train.tsv" --out "$tmp/c.st"
expect 2 "--seg-len does not apply" -- "${tr[@]}" "${tiny[@]}" --seg-len 8 --out "$tmp/c.st"
expect 2 "--pool must be cls or mean" -- "${tr[@]}" "${tiny[@]}" --pool max --out "$tmp/c.st"
expect 1 "empty\.tsv" -- "$bin" train --task classify --data "$tmp/empty.tsv" --valid "$tmp/valid.tsv" --out "$tmp/c.st"
expect 1 "nocol\.tsv.*(column|header)" -- "$bin" train --task classify --data "$tmp/train.tsv" --valid "$tmp/nocol.tsv" \
    --text-col text --out "$tmp/c.st"
check "no checkpoint from failed runs" -- test ! -e "$tmp/c.st"

check "train words" -- "${tr[@]}" "${tiny[@]}" --tokens words --attn window:w=2 --out "$tmp/w.st" --json
cp "$tmp/out" "$tmp/o"
check "train: JSON last line" -- grep -q '"valid_accuracy":1.000000' "$tmp/o"
check "train bytes, mean pooling" -- "${tr[@]}" "${tiny[@]}" --pool mean --out "$tmp/b.st"
check "eval" -- "$bin" eval --ckpt "$tmp/w.st" --task classify --data "$tmp/valid.tsv" --json
cp "$tmp/out" "$tmp/o"
check "eval: last line" -- grep -qx '{"accuracy":1.000000,"examples":8}' <(tail -1 "$tmp/o")
printf 'label\ttext\nneutral\tgood fine\npos\tgood good\n' >"$tmp/unseen.tsv"
check "eval: unseen label counted wrong" -- "$bin" eval --ckpt "$tmp/w.st" --task classify --data "$tmp/unseen.tsv" --json
cp "$tmp/out" "$tmp/o" && cp "$tmp/err" "$tmp/e"
check "eval: 1 of 2" -- grep -qx '{"accuracy":0.500000,"examples":2}' <(tail -1 "$tmp/o")
check "eval: the warning says so" -- grep -q "label the checkpoint was not trained on: counted wrong" "$tmp/e"
expect 1 "empty\.tsv" -- "$bin" eval --ckpt "$tmp/w.st" --task classify --data "$tmp/empty.tsv"
expect 1 "nocol\.tsv" -- "$bin" eval --ckpt "$tmp/w.st" --task classify --data "$tmp/nocol.tsv" --text-col text
expect 1 "valid\.tsv.*not a longctx checkpoint|valid\.tsv" -- "$bin" eval --ckpt "$tmp/valid.tsv" --task classify --data "$tmp/valid.tsv"
printf 'good fine great\nbad awful poor\n' >"$tmp/lines.txt"
check "predict lines" -- "$bin" predict --ckpt "$tmp/w.st" "$tmp/lines.txt"
cp "$tmp/out" "$tmp/o"
check "predict: one label per line" -- test "$(tr '\n' ' ' <"$tmp/o")" = "pos neg "
check "predict --tsv from stdin" -- bash -c "\"$bin\" predict --ckpt \"$tmp/b.st\" --tsv - <\"$tmp/valid.tsv\" >\"$tmp/p.txt\""
check "predict --tsv: 8 labels" -- test "$(wc -l <"$tmp/p.txt")" -eq 8
cli_summary cli_classify_test
