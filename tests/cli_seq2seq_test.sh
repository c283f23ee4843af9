#!/usr/bin/env bash
# CLI tests of the encoder-decoder (docs/seq2seq.md): `train --task seq2seq` learns to reverse short strings
# of a small alphabet (TSV files made here with awk) to a high exact match; `eval --task seq2seq --json`
# ends with the JSON of exact_match, char_accuracy and n; `predict` prints one generated target per line in
# order, from a TSV file (--tsv) or plain lines; --resume from OUT.last ends with the file of an
# uninterrupted run; SIGINT saves the last state and stops; an export (no optimizer state) scores the same;
# bad inputs, an output naming an input, checkpoints of another family and lying metadata fail with one line
# naming the file or flag.
# usage: tests/cli_seq2seq_test.sh path/to/longctx
set -u
bin=$1
cli_one_line_errors=1
source "$(dirname "${BASH_SOURCE[0]}")/cli_lib.sh"

# reversal of strings of 3..8 letters over a..e; seeded, so every run writes the same files
pairs() { # pairs SEED N
    awk -v seed="$1" -v n="$2" 'BEGIN {
        srand(seed); print "Source\tTarget"
        for (i = 0; i < n; i++) {
            len = 3 + int(rand() * 6); s = ""; r = ""
            for (j = 0; j < len; j++) { c = substr("abcde", 1 + int(rand() * 5), 1); s = s c; r = c r }
            print s "\t" r
        } }'
}
pairs 1 4000 >"$tmp/train.tsv"
pairs 2 100 >"$tmp/valid.tsv"
pairs 3 100 >"$tmp/test.tsv"
tiny=(--layers 2 --dim 32 --heads 4 --ffn 64 --batch 32 --lr 0.001 --warmup 50 --threads 1)
tr=("$bin" train --task seq2seq --data "$tmp/train.tsv" --valid "$tmp/valid.tsv")

# ---- refusals: one line naming the flag or the file ----------------------------------------------------------
expect 2 "--out is required" -- "${tr[@]}" "${tiny[@]}"
expect 2 "--valid is required" -- "$bin" train --task seq2seq --data "$tmp/train.tsv" --out "$tmp/s.ckpt"
expect 2 "--data is required" -- "$bin" train --task seq2seq --valid "$tmp/valid.tsv" --out "$tmp/s.ckpt"
expect 2 "--seg-len does not apply to seq2seq" -- "${tr[@]}" "${tiny[@]}" --seg-len 8 --out "$tmp/s.ckpt"
expect 2 "--out .*train.tsv is the --data file .*train.tsv: refusing to replace it" -- "${tr[@]}" "${tiny[@]}" \
    --out "$tmp/train.tsv"
expect 2 "--log .*valid.tsv is the --valid file" -- "${tr[@]}" "${tiny[@]}" --out "$tmp/s.ckpt" --log "$tmp/valid.tsv"
printf 'Input\tOutput\nab\tba\n' >"$tmp/cols.tsv"
expect 1 "cols\.tsv: no column named 'Text' for the source" -- "$bin" train --task seq2seq --data "$tmp/cols.tsv" \
    --valid "$tmp/cols.tsv" --src-col Text --out "$tmp/s.ckpt"
printf 'Source\tTarget\nabc\n' >"$tmp/short.tsv"
expect 1 "short\.tsv:2: 1 column, the header has 2" -- "${tr[@]}" --data "$tmp/short.tsv" --out "$tmp/s.ckpt"
expect 1 "--data .*train\.tsv:2: a source of 8 bytes, longer than the model's 2 \(--max-src-len\)" -- \
    "${tr[@]}" "${tiny[@]}" --max-src-len 2 --out "$tmp/s.ckpt"
[ ! -e "$tmp/s.ckpt" ] && passed=$((passed + 1)) || { failed=$((failed + 1)); echo "FAIL: a refused run wrote --out"; }

# ---- learning the reversal --------------------------------------------------------------------------------------
# Under ASan (LC_VARIANT=asan) the same commands run 60 steps: the sanitizers check their memory, and what the
# model learns (the checks marked "learned") is checked by the release and minimal variants.
steps=600
if [ "${LC_VARIANT:-}" = asan ]; then steps=60; echo "note: asan: 60 training steps; the learned checks are the other variants'"; fi
learned() { [ "$steps" -eq 600 ]; }
start=$(date +%s.%N)
check "train --task seq2seq" -- "${tr[@]}" "${tiny[@]}" --steps $steps --eval-every $((steps / 2)) --out "$tmp/s.ckpt" \
    --log "$tmp/s.log" --json
secs=$(awk -v a="$start" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }')
train_json=$(tail -n 1 "$tmp/out")
best=$(printf '%s' "$train_json" | sed -n 's/.*"valid_exact_match":\([0-9.]*\).*/\1/p')
echo "note: reversal, $steps steps in ${secs}s: best valid exact match ${best:-none}"
if learned; then
    awk -v e="${best:-0}" 'BEGIN { exit !(e >= 0.9) }' && passed=$((passed + 1)) ||
        { failed=$((failed + 1)); echo "FAIL: valid exact match ${best:-none} < 0.9: $train_json"; }
fi
[ -s "$tmp/s.ckpt" ] && [ -s "$tmp/s.ckpt.last" ] && passed=$((passed + 1)) ||
    { failed=$((failed + 1)); echo "FAIL: no s.ckpt and s.ckpt.last"; }
grep -q '"valid_exact_match":' "$tmp/s.log" && [ "$(wc -l <"$tmp/s.log")" -eq $steps ] && passed=$((passed + 1)) ||
    { failed=$((failed + 1)); echo "FAIL: --log: $(tail -n 1 "$tmp/s.log")"; }

check "eval --task seq2seq --json" -- "$bin" eval --task seq2seq --ckpt "$tmp/s.ckpt" --data "$tmp/test.tsv" --json
eval_json=$(tail -n 1 "$tmp/out")
echo "note: test $eval_json"
em=$(printf '%s' "$eval_json" | sed -n 's/^{"exact_match":\([0-9.]*\),"char_accuracy":\([0-9.]*\),"n":100}$/\1/p')
if learned; then
    awk -v e="${em:-0}" 'BEGIN { exit !(e >= 0.9) }' && passed=$((passed + 1)) ||
        { failed=$((failed + 1)); echo "FAIL: eval: $eval_json"; }
else
    [ -n "$em" ] && passed=$((passed + 1)) || { failed=$((failed + 1)); echo "FAIL: eval: $eval_json"; }
fi

check "predict --tsv" -- "$bin" predict --ckpt "$tmp/s.ckpt" --tsv "$tmp/test.tsv"
cp "$tmp/out" "$tmp/pred.txt"
right=$(tail -n +2 "$tmp/test.tsv" | cut -f2 | paste -d'\t' - "$tmp/pred.txt" | awk -F'\t' '$1 == $2' | wc -l)
[ "$(wc -l <"$tmp/pred.txt")" -eq 100 ] && awk -v r="$right" -v e="${em:-0}" 'BEGIN { exit !(r == int(e * 100 + 0.5)) }' &&
    passed=$((passed + 1)) || { failed=$((failed + 1)); echo "FAIL: predict: $right of $(wc -l <"$tmp/pred.txt") right, eval says $em"; }
printf 'abcde\nedd\n' | "$bin" predict --ckpt "$tmp/s.ckpt" >"$tmp/plain.txt" 2>"$tmp/err"
if learned; then want=$(printf 'edcba\ndde'); else want=$(cat "$tmp/plain.txt"); fi # learned: the reversals
[ "$(wc -l <"$tmp/plain.txt")" -eq 2 ] && [ "$(cat "$tmp/plain.txt")" = "$want" ] && passed=$((passed + 1)) ||
    { failed=$((failed + 1)); echo "FAIL: predict from standard input: $(head -c 200 "$tmp/plain.txt") $(cat "$tmp/err")"; }
expect 1 "input 1 has 12 bytes, longer than the longest source of .*s.ckpt \(8\)" -- \
    sh -c "printf 'abcdeabcdeab\n' | '$bin' predict --ckpt '$tmp/s.ckpt'"
expect 2 "--probs is for classifiers: .*s.ckpt is a seq2seq model" -- "$bin" predict --ckpt "$tmp/s.ckpt" --probs "$tmp/plain.txt"

# ---- an export scores the same; other families and lying metadata are refused ---------------------------------
check "export" -- "$bin" export --ckpt "$tmp/s.ckpt" --out "$tmp/e.ckpt"
check "eval of the export" -- "$bin" eval --task seq2seq --ckpt "$tmp/e.ckpt" --data "$tmp/test.tsv" --json
[ "$(tail -n 1 "$tmp/out")" = "$eval_json" ] && passed=$((passed + 1)) ||
    { failed=$((failed + 1)); echo "FAIL: export scores $(tail -n 1 "$tmp/out"), not $eval_json"; }
"$bin" train --preset tiny --layers 1 --dim 16 --heads 2 --ffn 32 --seg-len 8 --steps 1 --threads 1 \
    --data "$tmp/train.tsv" --out "$tmp/lm.ckpt" >/dev/null 2>&1
expect 1 "lm\.ckpt: a language model checkpoint \(model = xl\), not a seq2seq model: use it with longctx eval" -- \
    "$bin" eval --task seq2seq --ckpt "$tmp/lm.ckpt" --data "$tmp/test.tsv"
expect 1 "s\.ckpt: a seq2seq checkpoint \(model = seq2seq\), not a language model: use it with longctx predict, eval --task seq2seq" -- \
    "$bin" eval --ckpt "$tmp/s.ckpt"
expect 1 "s\.ckpt: a seq2seq checkpoint \(model = seq2seq\), not a classifier" -- \
    "$bin" eval --task classify --ckpt "$tmp/s.ckpt" --data "$tmp/test.tsv"
for kv in enc.n_layer=4096 dec.d_model=1048576 max_src_len=1048576 tied=0; do
    ckpt_set_meta "$tmp/e.ckpt" "$tmp/bad.ckpt" "$kv"
    expect 1 "bad\.ckpt: (bad model config: (encoder: layers must be|seq2seq: tied embeddings need equal widths)|no tensor named enc\.wte|tensor enc\.wpe has shape \[9, 32\] but the model expects \[1048577, 32\])" -- \
        "$bin" eval --task seq2seq --ckpt "$tmp/bad.ckpt" --data "$tmp/test.tsv"
done

# ---- --resume from OUT.last: the file of an uninterrupted run ---------------------------------------------------
short=("${tr[@]}" "${tiny[@]}" --steps 30 --eval-every 10)
check "uninterrupted" -- "${short[@]}" --out "$tmp/u.ckpt"
check "first half" -- "${short[@]}" --stop-after 15 --out "$tmp/r.ckpt"
check "resumed" -- "$bin" train --task seq2seq --data "$tmp/train.tsv" --valid "$tmp/valid.tsv" --threads 1 \
    --resume "$tmp/r.ckpt.last" --out "$tmp/r.ckpt"
check "resumed == uninterrupted (OUT.last)" -- cmp "$tmp/u.ckpt.last" "$tmp/r.ckpt.last"
check "resumed == uninterrupted (the best)" -- cmp "$tmp/u.ckpt" "$tmp/r.ckpt"
expect 2 "--dim cannot be combined with --resume" -- "$bin" train --task seq2seq --data "$tmp/train.tsv" \
    --valid "$tmp/valid.tsv" --resume "$tmp/r.ckpt.last" --out "$tmp/r.ckpt" --dim 64
expect 2 "has done 30 of its 30 steps: give a larger --steps" -- "$bin" train --task seq2seq --data "$tmp/train.tsv" \
    --valid "$tmp/valid.tsv" --resume "$tmp/r.ckpt.last" --out "$tmp/r.ckpt"
expect 1 "--data .*valid.tsv has 100 pairs, not the 4000 of the training file" -- "$bin" train --task seq2seq \
    --data "$tmp/valid.tsv" --valid "$tmp/valid.tsv" --resume "$tmp/r.ckpt.last" --out "$tmp/r.ckpt" --steps 40

# ---- a signal saves the last state and stops; the run resumes from it -----------------------------------------
signal_run INT '^seq2seq:' "$tmp/sig.err" 0.5 -- "${tr[@]}" "${tiny[@]}" --steps 1000000 --eval-every 0 \
    --out "$tmp/sig.ckpt"
rc=$signal_rc
[ $rc -eq 130 ] && grep -q "interrupted by SIGINT at step [0-9]*: no validation yet, the last state .*sig.ckpt.last (continue with --resume" "$tmp/sig.err" &&
    [ -s "$tmp/sig.ckpt.last" ] && [ ! -e "$tmp/sig.ckpt" ] && passed=$((passed + 1)) ||
    { failed=$((failed + 1)); echo "FAIL: SIGINT: exit $rc: $(tail -c 300 "$tmp/sig.err")"; }
check "the interrupted run resumes" -- "$bin" train --task seq2seq --data "$tmp/train.tsv" --valid "$tmp/valid.tsv" \
    --resume "$tmp/sig.ckpt.last" --out "$tmp/sig.ckpt" --stop-after 2 --threads 1
grep -q "^stopped at step [0-9]* of 1000000 before any validation" "$tmp/out" && passed=$((passed + 1)) ||
    { failed=$((failed + 1)); echo "FAIL: resumed without validation: $(cat "$tmp/out")"; }

cli_summary cli_seq2seq_test
