#!/usr/bin/env bash
# CLI tests of sequence classification (docs/guides/classify.md): `train --task classify`, `eval --task classify` and
# `predict` on tiny files and a tiny model: bad inputs (a TSV with a missing column, an empty file, --max-len 0,
# a checkpoint of another model) fail with one line naming the file or flag; a label never seen in training
# is counted wrong with a warning; eval's last stdout line is the JSON; predict prints one label per line;
# --resume from OUT.last ends with the weights of an uninterrupted run; no output may be an input file;
# --objective mlm pre-trains an encoder that eval and predict refuse and --init reads (its vocabulary becomes the
# classifier's).
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
expect 2 "--pool must be cls, mean or max" -- "${tr[@]}" "${tiny[@]}" --pool sum --out "$tmp/c.st"
expect 2 "--parens drop needs --tokens words" -- "${tr[@]}" "${tiny[@]}" --parens drop --out "$tmp/c.st"
expect 2 "--bracket-depth" -- "${tr[@]}" "${tiny[@]}" --bracket-depth 5000 --out "$tmp/c.st"
expect 1 "empty\.tsv" -- "$bin" train --task classify --data "$tmp/empty.tsv" --valid "$tmp/valid.tsv" --out "$tmp/c.st"
expect 1 "nocol\.tsv.*(column|header)" -- "$bin" train --task classify --data "$tmp/train.tsv" --valid "$tmp/nocol.tsv" \
    --text-col text --out "$tmp/c.st"
# an output is never an input: --out (or its OUT.last, or --log) naming --data, --valid or --init is refused
cp "$tmp/train.tsv" "$tmp/train_keep.tsv"; cp "$tmp/valid.tsv" "$tmp/valid_keep.tsv"
expect 2 "--out .*train.tsv is the --data file .*train.tsv: refusing to replace it" -- "${tr[@]}" "${tiny[@]}" --out "$tmp/train.tsv"
expect 2 "--out .*valid.tsv is the --valid file" -- "${tr[@]}" "${tiny[@]}" --out "$tmp/valid.tsv"
ln -f "$tmp/valid.tsv" "$tmp/hard.tsv"
expect 2 "--out .*hard.tsv is the --valid file" -- "${tr[@]}" "${tiny[@]}" --out "$tmp/hard.tsv"
expect 2 "--log .*train.tsv is the --data file" -- "${tr[@]}" "${tiny[@]}" --out "$tmp/c.st" --log "$tmp/train.tsv"
cp "$tmp/train.tsv" "$tmp/x.last"
expect 2 "--out .*x.last is the --data file .*x.last" -- "$bin" train --task classify --data "$tmp/x.last" \
    --valid "$tmp/valid.tsv" "${tiny[@]}" --out "$tmp/x"
check "the refused runs left --data as it was" -- cmp "$tmp/train.tsv" "$tmp/train_keep.tsv"
check "the refused runs left --valid as it was" -- cmp "$tmp/valid.tsv" "$tmp/valid_keep.tsv"
check "no checkpoint from failed runs" -- test ! -e "$tmp/c.st"

check "train words" -- "${tr[@]}" "${tiny[@]}" --tokens words --attn window:w=2 --out "$tmp/w.st" --json
cp "$tmp/out" "$tmp/o"
check "train: JSON last line" -- grep -q '"valid_accuracy":1.000000' "$tmp/o"
check "train bytes, mean pooling" -- "${tr[@]}" "${tiny[@]}" --pool mean --out "$tmp/b.st"
check "train words, bracket depth, parens dropped" -- "${tr[@]}" "${tiny[@]}" --tokens words --bracket-depth 4 \
    --parens drop --out "$tmp/d.st"
check "eval of it" -- "$bin" eval --ckpt "$tmp/d.st" --task classify --data "$tmp/valid.tsv" --json
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
check "export a classifier" -- "$bin" export --ckpt "$tmp/w.st" --out "$tmp/w.export"
check "its export predicts the same" -- "$bin" predict --ckpt "$tmp/w.export" "$tmp/lines.txt"
cp "$tmp/out" "$tmp/o2"   # (check writes each command's stdout to $tmp/out)
check "the same labels" -- cmp -s "$tmp/o" "$tmp/o2"
check "predict --tsv from stdin" -- bash -c "\"$bin\" predict --ckpt \"$tmp/b.st\" --tsv - <\"$tmp/valid.tsv\" >\"$tmp/p.txt\""
check "predict --tsv: 8 labels" -- test "$(wc -l <"$tmp/p.txt")" -eq 8

# metadata that claims a larger model than the file's tensors (d_ff 2^20 in a 50 KB file) is refused by the tensor
# table before anything is allocated: it once built the model it claimed (21 s and 4.9 GB for --resume). Release
# builds run it in 1 GB of address space (AddressSanitizer needs more).
ckpt_set_meta "$tmp/w.st.last" "$tmp/huge.st" d_ff=1048576
in_1gb() { if [ "${LC_VARIANT:-release}" = asan ]; then "$@"; else bash -c 'ulimit -v 1000000 && "$@"' _ "$@"; fi; }
claims="huge\.st: tensor blocks\.0\.ffn\.fc1\.weight has shape \[32, 16\] but the model expects \[1048576, 16\]"
expect 1 "$claims" -- in_1gb "${tr[@]}" --resume "$tmp/huge.st" --out "$tmp/huge2.st" --threads 1
expect 1 "$claims" -- in_1gb "$bin" eval --ckpt "$tmp/huge.st" --task classify --data "$tmp/valid.tsv"
expect 1 "$claims" -- in_1gb "$bin" predict --ckpt "$tmp/huge.st" "$tmp/lines.txt"
ckpt_set_meta "$tmp/w.st.last" "$tmp/classes.st" n_classes=3
expect 1 "classes\.st: 'classify\.labels' announces 2 labels for n_classes 3" -- \
    "$bin" eval --ckpt "$tmp/classes.st" --task classify --data "$tmp/valid.tsv"
check "no checkpoint from refused runs" -- test ! -e "$tmp/huge2.st"
# what a TSV file may make the reader hold is bounded: --max-examples (default 4,194,304), a line of 16 MiB
expect 1 "train\.tsv:7: more than 5 examples, the most read from one file \(--max-examples\)" -- \
    "$bin" eval --ckpt "$tmp/w.st" --task classify --data "$tmp/train.tsv" --max-examples 5
expect 1 "train\.tsv:12: more than 10 examples" -- "${tr[@]}" "${tiny[@]}" --max-examples 10 --out "$tmp/huge2.st"
check "eval --max-examples as many as the file has" -- "$bin" eval --ckpt "$tmp/w.st" --task classify --data \
    "$tmp/valid.tsv" --max-examples 8

# --resume: 40 steps, stopped after 20 and resumed, ends with the same weights as 40 in one go (OUT.last)
same_weights() { # the tensors' bytes after each file's JSON header (its length: the first 8 bytes)
    local ha hb
    ha=$(od -An -tu8 -N8 "$1" | tr -d ' ') hb=$(od -An -tu8 -N8 "$2" | tr -d ' ')
    cmp -s <(tail -c +$((ha + 9)) "$1") <(tail -c +$((hb + 9)) "$2")
}
rs=("${tr[@]}" "${tiny[@]}" --tokens words --steps 40 --eval-every 10)
check "train 40 steps" -- "${rs[@]}" --out "$tmp/one.st"
cp "$tmp/err" "$tmp/e"
check "progress: a classifier's loss is not shown as bits per byte" -- grep -q "step 40/40 | loss [0-9.]* | lr" "$tmp/e"
check "train 20 of 40 steps" -- "${rs[@]}" --stop-after 20 --out "$tmp/two.st"
check "stopped: OUT.last written" -- test -s "$tmp/two.st.last"
expect 2 "--lr cannot be combined with --resume" -- "${tr[@]}" --resume "$tmp/two.st.last" --lr 0.1 --out "$tmp/two.st"
expect 2 "--layers cannot be combined with --resume" -- "${tr[@]}" --resume "$tmp/two.st.last" --layers 2 --out "$tmp/two.st"
expect 1 "not the training file" -- "$bin" train --task classify --data "$tmp/valid.tsv" --valid "$tmp/valid.tsv" \
    --resume "$tmp/two.st.last" --out "$tmp/two.st"
check "resume to 40" -- "${tr[@]}" --resume "$tmp/two.st.last" --out "$tmp/two.st" --threads 1 --json
cp "$tmp/out" "$tmp/o"
check "resume: JSON says 20 steps in this run" -- grep -q '"steps":40,"run_steps":20' "$tmp/o"

# --precision bf16: recorded in the checkpoint, kept by --resume unless given again, refused when unknown
expect 2 "train: --precision must be fp32 or bf16, got 'half'" -- "${rs[@]}" --precision half --out "$tmp/h.st"
check "train --precision bf16" -- "${rs[@]}" --precision bf16 --stop-after 20 --out "$tmp/bf.st"
check "bf16 recorded" -- grep -aq '"precision":"bf16"' "$tmp/bf.st.last"
check "resume a bf16 run" -- "${tr[@]}" --resume "$tmp/bf.st.last" --out "$tmp/bf.st"
check "bf16 kept by --resume" -- grep -aq '"precision":"bf16"' "$tmp/bf.st.last"
check "resume with --precision fp32" -- "${tr[@]}" --resume "$tmp/bf.st.last" --precision fp32 --steps 41 --out "$tmp/bf.st"
check "fp32 recorded after the switch" -- grep -aq '"precision":"fp32"' "$tmp/bf.st.last"
check "eval a checkpoint of the bf16 run" -- "$bin" eval --ckpt "$tmp/bf.st" --task classify --data "$tmp/valid.tsv" --json
check "resume: the same weights and moments as one run" -- same_weights "$tmp/one.st.last" "$tmp/two.st.last"
expect 2 "has done 40 of its 40 steps" -- "${tr[@]}" --resume "$tmp/two.st.last" --out "$tmp/two.st"
# a state saved between validations (--save-every, no validation at that step) resumes too: the run is
# killed outright after its first periodic save, so that save is the last state
"${tr[@]}" "${tiny[@]}" --tokens words --steps 100000 --eval-every 0 --save-every 1 --out "$tmp/k.st" >/dev/null 2>&1 &
kpid=$!
for _ in $(seq 200); do [ -s "$tmp/k.st.last" ] && break; sleep 0.05; done
kill -9 "$kpid" 2>/dev/null; wait "$kpid" 2>/dev/null
check "killed between validations: OUT.last written" -- test -s "$tmp/k.st.last"
check "a state saved between validations resumes" -- "${tr[@]}" --resume "$tmp/k.st.last" --steps 100000 --stop-after 1 --out "$tmp/k.st"
# --objective mlm: a masked-token pre-training of the encoder on the same inputs (words), which eval refuses and
# --init of a classifier (another attention spec, another --max-len) starts from, with its vocabulary
expect 2 "--objective must be labels or mlm, got 'clm'" -- "${tr[@]}" "${tiny[@]}" --tokens words --objective clm --out "$tmp/m.st"
check "train --objective mlm" -- "${tr[@]}" "${tiny[@]}" --tokens words --objective mlm --out "$tmp/m.st" --json
cp "$tmp/err" "$tmp/mlm.err"
check "mlm: validation is masked-token accuracy" -- grep -q "valid masked-token accuracy" "$tmp/mlm.err"
expect 1 "masked-token pre-training.*--init" -- "$bin" eval --ckpt "$tmp/m.st" --task classify --data "$tmp/valid.tsv"
expect 1 "masked-token pre-training.*--init" -- "$bin" predict --ckpt "$tmp/m.st" "$tmp/lines.txt"
check "train --init from the mlm checkpoint" -- "${tr[@]}" "${tiny[@]}" --tokens words --attn window:w=2 --max-len 24 \
    --init "$tmp/m.st" --out "$tmp/mi.st"
printf 'label\ttext\n' >"$tmp/other.tsv"
for i in 1 2 3; do printf 'pos\tnice %d\nneg\tugly %d\n' "$i" "$i"; done >>"$tmp/other.tsv"
check "--init of a words classifier on other texts" -- "$bin" train --task classify --data "$tmp/other.tsv" \
    --valid "$tmp/other.tsv" "${tiny[@]}" --tokens words --init "$tmp/m.st" --out "$tmp/mo.st"
cp "$tmp/err" "$tmp/mo.err"
check "--init: the checkpoint's vocabulary (34 ids), not one built from --data (9)" -- grep -q "vocab 34)" "$tmp/mo.err"

cli_summary cli_classify_test
