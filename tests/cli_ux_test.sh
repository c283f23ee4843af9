#!/usr/bin/env bash
# CLI tests of what a new user meets first (issue 42 items 2, 4 and 6; issue 46 items 6 and 12): `predict`
# reads the text column eval --task classify reads, takes flags before or after its file, refuses a
# directory, a device, a FIFO, an empty input, a line with a NUL byte and never prints nothing with exit 0
# (a .tsv.gz too), and prints probabilities with --probs; a checkpoint of another family is refused naming
# its family and the commands that take it; a file that is not a checkpoint says so; one "PATH: cannot
# open: REASON" format; plurals and integer ranges; `summarize --method` (LexRank, lead-K, lead-3 without a
# checkpoint) and the BBC title line; the shipped models are exported weights.
# usage: tests/cli_ux_test.sh path/to/longctx
set -u
bin=$1
cli_one_line_errors=1
source "$(dirname "${BASH_SOURCE[0]}")/cli_lib.sh"
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
listops=$root/models/listops-best.safetensors hibert=$root/models/hibert-bbc.safetensors
keep() { cp "$tmp/out" "$tmp/$1.out"; cp "$tmp/err" "$tmp/$1.err"; }

# ---- a tiny classifier (labels pos/neg; header "label<tab>text": the text is the last column)
printf 'label\ttext\n' >"$tmp/train.tsv"
for i in $(seq 1 24); do printf 'pos\tgood fine great %d good\nneg\tbad awful poor %d bad\n' "$i" "$i"; done >>"$tmp/train.tsv"
head -9 "$tmp/train.tsv" >"$tmp/valid.tsv"
check "train a tiny classifier" -- "$bin" train --task classify --data "$tmp/train.tsv" --valid "$tmp/valid.tsv" \
    --layers 1 --dim 16 --heads 2 --ffn 32 --max-len 32 --batch 8 --steps 60 --warmup 5 --eval-every 60 --lr 0.003 \
    --tokens words --threads 1 --out "$tmp/w.st"
printf 'good fine great\nbad awful poor\ngreat good\n' >"$tmp/lines.txt"
check "predict" -- "$bin" predict --ckpt "$tmp/w.st" "$tmp/lines.txt"
keep p
check "predict: one label per line" -- test "$(paste -sd' ' "$tmp/p.out")" = "pos neg pos"

# ---- predict: flags after the file, the file first, "--" before it (one convention for every command)
check "predict: flags after the file" -- "$bin" predict --ckpt "$tmp/w.st" "$tmp/lines.txt" --threads 1 --batch 2
keep a
check "  the same labels" -- cmp -s "$tmp/a.out" "$tmp/p.out"
check "predict: the file first" -- "$bin" predict "$tmp/lines.txt" --ckpt "$tmp/w.st"
keep a
check "  the same labels" -- cmp -s "$tmp/a.out" "$tmp/p.out"
check "predict -- FILE" -- "$bin" predict --ckpt "$tmp/w.st" -- "$tmp/lines.txt"
keep a
check "  the same labels" -- cmp -s "$tmp/a.out" "$tmp/p.out"
expect 2 "predict: unexpected argument '.*lines.txt'" -- "$bin" predict --ckpt "$tmp/w.st" "$tmp/lines.txt" "$tmp/lines.txt"
printf 'One sentence here. Another one there.\n' >"$tmp/two.txt"
check "summarize: flags after the files" -- "$bin" summarize "$tmp/two.txt" --method lead3 --no-title

# ---- predict --tsv reads the column eval --task classify reads: Source in ListOps files (the last is Target)
check "listops file" -- "$bin" listops --n 5 --seed 7 --out "$tmp/l.tsv"
check "predict --tsv with the shipped ListOps model" -- "$bin" predict --ckpt "$listops" --tsv "$tmp/l.tsv" --threads 1
keep lo
check "predict --tsv --text-col Source" -- "$bin" predict --ckpt "$listops" --tsv --text-col Source "$tmp/l.tsv" --threads 1
keep src
check "  the default is the Source column" -- cmp -s "$tmp/src.out" "$tmp/lo.out"
check "  5 labels" -- test "$(wc -l <"$tmp/lo.out")" -eq 5
check "eval --task classify on the same file" -- "$bin" eval --ckpt "$listops" --task classify --data "$tmp/l.tsv" --threads 1
keep ev
right=$(paste "$tmp/lo.out" <(cut -f2 "$tmp/l.tsv" | tail -n +2) | awk '$1 == $2' | wc -l)
check "  predict's labels give eval's accuracy" -- grep -q "($right correct)" "$tmp/ev.out"
check "predict --tsv: without a Source column, the last" -- "$bin" predict --ckpt "$tmp/w.st" --tsv "$tmp/valid.tsv"
check "  8 labels, those of the texts" -- test "$(paste -sd' ' "$tmp/out")" = "$(tail -n +2 "$tmp/valid.tsv" | cut -f1 | paste -sd' ')"
# a .tsv.gz: read (a build with zlib) or refused with a line saying so, never nothing with exit 0
gzip -c "$tmp/l.tsv" >"$tmp/l.tsv.gz"
"$bin" predict --ckpt "$listops" --tsv "$tmp/l.tsv.gz" --threads 1 >"$tmp/gz.out" 2>"$tmp/gz.err"
gz=$?
check "predict --tsv x.tsv.gz: the same labels, or an error naming gzip" -- test \
    \( "$gz" -eq 0 -a -s "$tmp/gz.out" \) -o \( "$gz" -ne 0 -a -n "$(grep 'gzip' "$tmp/gz.err")" \)
[ "$gz" -eq 0 ] && check "  the same labels as the plain file" -- cmp -s "$tmp/gz.out" "$tmp/lo.out"
expect 1 "standard input: gzip-compressed" -- bash -c "\"$bin\" predict --ckpt \"$listops\" --tsv - <\"$tmp/l.tsv.gz\""

# ---- predict: inputs that are not text files
expect 1 "$tmp: is a directory, not a regular file" -- "$bin" predict --ckpt "$tmp/w.st" "$tmp"
expect 1 "/dev/zero: is a character device, not a regular file" -- timeout 20 "$bin" predict --ckpt "$tmp/w.st" /dev/zero
mkfifo "$tmp/fifo"
expect 1 "fifo: is a FIFO, not a regular file" -- timeout 20 "$bin" predict --ckpt "$tmp/w.st" "$tmp/fifo"
: >"$tmp/empty.txt"
expect 1 "empty.txt: empty input: no lines to classify" -- "$bin" predict --ckpt "$tmp/w.st" "$tmp/empty.txt"
expect 1 "standard input: empty input" -- bash -c "\"$bin\" predict --ckpt \"$tmp/w.st\" </dev/null"
printf 'label\ttext\n' >"$tmp/header.tsv"
expect 1 "header.tsv: no examples after the header" -- "$bin" predict --ckpt "$tmp/w.st" --tsv "$tmp/header.tsv"
printf 'good fine\nbad\0awful\ngreat\npoor\n' >"$tmp/nul.txt"
expect 1 "nul.txt:2: a NUL byte at column 4" -- "$bin" predict --ckpt "$tmp/w.st" "$tmp/nul.txt"
expect 1 "standard input:2: a NUL byte" -- bash -c "\"$bin\" predict --ckpt \"$tmp/w.st\" - <\"$tmp/nul.txt\""
keep nul
check "  nothing printed" -- test ! -s "$tmp/nul.out"
expect 1 "/dev/zero: is a character device" -- timeout 20 "$bin" sample --ckpt "$tmp/w.st" --prompt-file /dev/zero
truncate -s 65M "$tmp/big.txt"
expect 1 "sample: --prompt-file .*big.txt: 68157440 bytes, more than 67108864" -- "$bin" sample --ckpt "$tmp/w.st" --prompt-file "$tmp/big.txt"
expect 1 "sample: --prompt-file standard input: more than 67108864 bytes" -- \
    timeout 60 bash -c "\"$bin\" sample --ckpt \"$tmp/w.st\" --prompt-file - </dev/zero"

# ---- predict --probs: a JSON line per input, the label the plain output gives, probabilities summing to 1
check "predict --probs" -- "$bin" predict --ckpt "$tmp/w.st" --probs "$tmp/lines.txt"
keep probs
pycheck "--probs: JSON lines with the labels and probabilities" -- python3 - "$tmp/probs.out" "$tmp/p.out" <<'PY'
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
labels = open(sys.argv[2]).read().split()
assert [r["label"] for r in rows] == labels, rows
for r in rows:
    p = r["probs"]
    assert sorted(p) == ["neg", "pos"] and abs(sum(p.values()) - 1) < 1e-6, r
    assert max(p, key=p.get) == r["label"], r
PY

# ---- checkpoints of another family: the family and the commands that take it
cls="listops-best.safetensors: a classifier checkpoint \(model = classify\), not"
takes="use it with longctx predict, eval --task classify or train --task classify --resume"
expect 1 "$cls a HIBERT model: $takes" -- "$bin" summarize --ckpt "$listops" "$tmp/lines.txt"
expect 1 "$cls a language model: $takes" -- "$bin" eval --ckpt "$listops"
expect 1 "$cls a language model: $takes" -- "$bin" sample --ckpt "$listops" --tokens 2
expect 1 "$cls a HIBERT model: $takes" -- "$bin" eval --task summarize --ckpt "$listops" --split test
expect 1 "hibert-bbc.safetensors: a HIBERT checkpoint \(model = hibert\), not a classifier: use it with longctx summarize" -- \
    "$bin" predict --ckpt "$hibert" "$tmp/lines.txt"
expect 1 "hibert-bbc.safetensors: a HIBERT checkpoint \(model = hibert\), not a classifier" -- \
    "$bin" eval --ckpt "$hibert" --task classify --data "$tmp/valid.tsv"
expect 1 "README.md: not a safetensors checkpoint" -- "$bin" eval --ckpt "$root/README.md"
expect 1 "README.md: not a safetensors checkpoint" -- "$bin" predict --ckpt "$root/README.md" "$tmp/lines.txt"

# ---- usage lines
expect 2 "eval: --task must be summarize, lm, classify, hibert or seq2seq, got 'sumarize'" -- "$bin" eval --task sumarize
expect 2 "train: --task must be lm, classify, hibert or seq2seq, got 'LM'" -- "$bin" train --task LM
expect 1 "README.md: not a safetensors checkpoint" -- "$bin" eval --task lm --ckpt "$root/README.md"
check "train --task lm is train: its --help lists the language model's flags" -- \
    bash -c '"$1" train --task lm --help | grep -q -- --seg-len' _ "$bin"
expect 2 "bench: unknown benchmark 'foo' \(benchmarks: train, xl-eval, attn, hibert, gemm" -- "$bin" bench foo
check "help" -- "$bin" --help
check "  the top-level help lists every benchmark" -- test "$(sed -n '/bench /,/listops/p' "$tmp/out" | grep -o 'train\|xl-eval\|attn\|hibert\|gemm' | sort -u | wc -l)" -eq 5

# ---- one format for a file that cannot be opened: "[CMD: --FLAG ]PATH: cannot open: REASON"
nope=$tmp/nope.txt
fmt="^longctx: error: ([a-z -]+: --[a-z-]+ )?$nope: cannot open: No such file or directory$"
expect 1 "$fmt" -- "$bin" predict --ckpt "$tmp/w.st" "$nope"
expect 1 "$fmt" -- "$bin" predict --ckpt "$nope" "$tmp/lines.txt"
expect 1 "$fmt" -- "$bin" sample --ckpt "$tmp/w.st" --prompt-file "$nope"
expect 1 "$fmt" -- "$bin" train --preset tiny --data "$nope" --steps 1
expect 1 "$fmt" -- "$bin" eval --ckpt "$nope"
expect 1 "$fmt" -- "$bin" eval --ckpt "$tmp/w.st" --task classify --data "$nope"
expect 1 "$fmt" -- "$bin" summarize --method lead3 "$nope"
expect 1 "$fmt" -- "$bin" hibert pretrain --docs "$nope" --out "$tmp/x.st"
expect 1 "$fmt" -- "$bin" export --ckpt "$nope" --out "$tmp/x.st"

# ---- plurals and ranges
expect 2 "train: --steps must be in 0\.\.1000000000000, got -1$" -- "$bin" train --steps -1
check "train --help: --save-every-min N ... every N minutes" -- "$bin" train --help
keep help
check "  N, not M" -- grep -q -- "--save-every-min N .*every N minutes" "$tmp/help.out"
head -c 20000 "$root/data/tinyshakespeare.txt" >"$tmp/small.txt"
lm=(--data "$tmp/small.txt" --layers 1 --dim 16 --heads 2 --ffn 32 --seg-len 16 --batch 2 --warmup 1 --eval-every 0)
check "train 3 steps on 1 thread" -- "$bin" train "${lm[@]}" --steps 3 --threads 1 --out "$tmp/lm.st"
keep tr
check "  '1 thread', not '1 threads'" -- grep -q "| 1 thread$" "$tmp/tr.err"
check "  '1 layer', not '1 layers'" -- grep -q "^model: xl, 1 layer, dim 16, 2 heads," "$tmp/tr.err"
check "  'training: 3 steps, from step 0 to 3'" -- grep -q "^training: 3 steps, from step 0 to 3," "$tmp/tr.err"
check "resume for 1 more step" -- "$bin" train --resume "$tmp/lm.st" --steps 4 --threads 1
keep tr
check "  'training: 1 step, from step 3 to 4'" -- grep -q "^training: 1 step, from step 3 to 4," "$tmp/tr.err"

# ---- summarize --method: the baselines on a user's file, without a checkpoint; the BBC title line
printf 'Claxton hunting first major medal\n\nBritish hurdler Sarah Claxton is confident she can win. She set a record. The race is in March. Her coach agrees.\n' >"$tmp/bbc.txt"
check "summarize --method lead3" -- "$bin" summarize --method lead3 "$tmp/bbc.txt"
check "  the first 3 sentences, the title left out" -- test "$(cat "$tmp/out")" = \
    "British hurdler Sarah Claxton is confident she can win. She set a record. The race is in March."
check "summarize --method leadk --sentences 2" -- "$bin" summarize --method leadk --sentences 2 "$tmp/bbc.txt"
check "  the first 2 sentences" -- test "$(cat "$tmp/out")" = "British hurdler Sarah Claxton is confident she can win. She set a record."
check "summarize --no-title" -- "$bin" summarize --method lead3 --no-title "$tmp/bbc.txt"
keep nt
check "  the title line is text then" -- grep -q "^Claxton hunting first major medal British hurdler" "$tmp/nt.out"
printf 'A first sentence ends here.\n\nThe second one follows. And a third. And a fourth.\n' >"$tmp/plain.txt"
check "summarize: a first line ending a sentence is not a title" -- "$bin" summarize --method lead3 "$tmp/plain.txt"
keep pl
check "  it is kept" -- grep -q "^A first sentence ends here. The second one follows. And a third.$" "$tmp/pl.out"
check "summarize without --ckpt: lexrank" -- "$bin" summarize --sentences 2 "$tmp/bbc.txt"
keep lex
check "summarize --method lexrank --scores" -- "$bin" summarize --method lexrank --sentences 2 --scores "$tmp/bbc.txt"
keep lexs
check "  the default is lexrank, its picks are the summary" -- test \
    "$(grep $'\t1\t' "$tmp/lexs.out" | cut -f3 | paste -sd' ')" = "$(cat "$tmp/lex.out")"
pycheck "  LexRank scores sum to 1" -- python3 -c "import sys; s = sum(float(l.split('\t')[0]) for l in open(sys.argv[1])); assert abs(s - 1) < 1e-5, s" "$tmp/lexs.out"
expect 2 "summarize: --method hibert needs --ckpt" -- "$bin" summarize --method hibert "$tmp/bbc.txt"
expect 2 "summarize: --method must be hibert, lexrank, leadk or lead3, got 'oracle'" -- "$bin" summarize --method oracle "$tmp/bbc.txt"
expect 2 "summarize: --ckpt is for --method hibert, not lead3" -- "$bin" summarize --ckpt "$hibert" --method lead3 "$tmp/bbc.txt"
check "summarize with the shipped model, title detected" -- "$bin" summarize --ckpt "$hibert" --threads 1 "$tmp/bbc.txt"
keep auto
check "  the same as --title" -- "$bin" summarize --ckpt "$hibert" --threads 1 --title "$tmp/bbc.txt"
keep ti
check "  (compared)" -- cmp -s "$tmp/ti.out" "$tmp/auto.out"

# ---- the shipped models are exported weights: no AdamW moments (optim.*)
for m in "$hibert" "$listops"; do
    n=$(od -An -tu8 -N8 "$m" | tr -d ' ')
    check "$(basename "$m"): no optimizer state" -- bash -c '! head -c "$1" "$2" | tail -c "$3" | grep -q "\"optim\."' _ \
        $((n + 8)) "$m" "$n"
done
cli_summary cli_ux_test
