#!/usr/bin/env bash
# CLI tests of the figures: `longctx plot` (loss and validation curves of --log files of every training
# command) and `longctx attn-map` (one head's attention weights over a text). The SVG checks
# (tests/pics_check.py: the figure parses, its points are the log's values, a window model's map has
# weight exactly inside the window) need python3; without it they are skipped with a note.
# usage: tests/cli_pics_test.sh path/to/longctx
set -u
bin=$1
source "$(dirname "${BASH_SOURCE[0]}")/cli_lib.sh"
cli_one_line_errors=1
here=$(dirname "${BASH_SOURCE[0]}")
py=$(command -v python3 || true)
[ -n "$py" ] || echo "note: python3 missing: the SVG content checks are skipped"
svgcheck() { # svgcheck DESCRIPTION -- args of pics_check.py
    local what=$1; shift 2
    [ -n "$py" ] || return 0
    check "$what" -- "$py" "$here/pics_check.py" "$@"
}
tiny=(--preset tiny --seg-len 32 --batch 2 --threads 1)
head -c 60000 data/tinyshakespeare.txt >"$tmp/small.txt"

# ---- plot: the logs every training command writes ----
check "train --log" -- "$bin" train "${tiny[@]}" --data "$tmp/small.txt" --steps 6 --eval-every 3 --eval-bytes 2048 \
    --log "$tmp/lm.jsonl" --out "$tmp/lm.ckpt"
check "plot of one train log" -- "$bin" plot "$tmp/lm.jsonl" --out "$tmp/lm.svg"
svgcheck "plot points are the train log's" -- plot "$tmp/lm.svg" "$tmp/lm.jsonl"
grep -q 'class="final"' "$tmp/lm.svg" && passed=$((passed + 1)) ||
    { failed=$((failed + 1)); echo "FAIL: the final pass over the whole split is not drawn apart"; }
check "plot against time" -- "$bin" plot "$tmp/lm.jsonl" --x time --out "$tmp/lm_time.svg" --title "a tiny run"
svgcheck "time axis points" -- plot "$tmp/lm_time.svg" "$tmp/lm.jsonl" --x time
# the other families' fields (classify, hibert pretrain with intruders, hibert finetune), written as they write them
cat >"$tmp/cls.jsonl" <<'L'
{"step":1,"loss":2.3,"lr":0.001,"tokens_per_s":100.0,"elapsed_s":1.5}
{"step":2,"loss":2.1,"lr":0.001,"tokens_per_s":100.0,"elapsed_s":3.0,"valid_accuracy":0.25,"valid_seconds":0.5}
{"step":3,"loss":1.9,"lr":0.001,"tokens_per_s":100.0,"elapsed_s":4.5,"valid_accuracy":0.375,"valid_seconds":0.5}
L
cat >"$tmp/pre.jsonl" <<'L'
{"step":100,"loss":3.17,"lr":0.00098,"tokens_per_s":16410.9,"elapsed_s":212.78,"intruder_bce":0.5634,"valid_bpb":4.627,"valid_intruder_bce":0.5637,"valid_seconds":4.17}
{"step":200,"loss":2.41,"lr":0.00096,"tokens_per_s":12611.7,"elapsed_s":420.36,"intruder_bce":0.5611,"valid_bpb":3.611,"valid_intruder_bce":0.5637,"valid_seconds":6.42}
L
cat >"$tmp/ft.jsonl" <<'L'
{"step":100,"loss":0.6287,"lr":0.00099,"tokens_per_s":10041.0,"elapsed_s":176.24,"valid_rouge1":62.91,"valid_rouge2":50.67,"valid_rougeL":39.89,"valid_seconds":16.89}
{"step":150,"loss":0.6001,"lr":0.00098,"tokens_per_s":10041.0,"elapsed_s":260.1}
{"step":200,"loss":0.5901,"lr":0.00097,"tokens_per_s":10041.0,"elapsed_s":350.00,"valid_rouge1":64.11,"valid_rouge2":51.02,"valid_rougeL":40.50,"valid_seconds":16.80}
L
for f in cls pre ft; do
    check "plot of a $f log" -- "$bin" plot "$tmp/$f.jsonl" --out "$tmp/$f.svg"
    svgcheck "$f points" -- plot "$tmp/$f.svg" "$tmp/$f.jsonl"
done
check "several logs in one figure" -- "$bin" plot "$tmp/lm.jsonl" "$tmp/cls.jsonl" --out "$tmp/two.svg"
svgcheck "several logs' points" -- plot "$tmp/two.svg" "$tmp/lm.jsonl" "$tmp/cls.jsonl"
grep -q '#d62728' "$tmp/two.svg" && passed=$((passed + 1)) || { failed=$((failed + 1)); echo "FAIL: second log's colour"; }
head -1 "$tmp/cls.jsonl" >"$tmp/one.jsonl"
check "a log of one line" -- "$bin" plot "$tmp/one.jsonl" --out "$tmp/one.svg"
svgcheck "one line: two or more x ticks" -- plot "$tmp/one.svg" "$tmp/one.jsonl"

# ---- plot: bad input, one error line, nothing replaced ----
echo keep >"$tmp/keep.svg"
expect 1 "plot: $tmp/nope.jsonl: cannot open: No such file" -- "$bin" plot "$tmp/nope.jsonl" --out "$tmp/keep.svg"
: >"$tmp/empty.jsonl"
expect 1 "empty.jsonl: no training log lines" -- "$bin" plot "$tmp/empty.jsonl" --out "$tmp/keep.svg"
echo '{"valid_bpc":2}' >"$tmp/nostep.jsonl"
expect 1 "nostep.jsonl: no training log lines" -- "$bin" plot "$tmp/nostep.jsonl" --out "$tmp/keep.svg"
{ head -1 "$tmp/cls.jsonl"; echo 'step 2 loss 1.5'; } >"$tmp/text.jsonl"
expect 1 "text.jsonl line 2: JSON error at byte 0.*one JSON object per line" -- "$bin" plot "$tmp/text.jsonl" --out "$tmp/keep.svg"
echo '[1,2]' >"$tmp/array.jsonl"
expect 1 "array.jsonl line 1: a JSON array, not an object" -- "$bin" plot "$tmp/array.jsonl" --out "$tmp/keep.svg"
expect 1 "plot: $tmp: is a directory" -- "$bin" plot "$tmp" --out "$tmp/keep.svg"
[ "$(cat "$tmp/keep.svg")" = keep ] && passed=$((passed + 1)) || { failed=$((failed + 1)); echo "FAIL: a failed plot replaced --out"; }
expect 2 "plot: --out is required" -- "$bin" plot "$tmp/cls.jsonl"
expect 2 "plot: no log file given" -- "$bin" plot --out "$tmp/x.svg"
expect 2 "plot: --x must be step or time" -- "$bin" plot "$tmp/cls.jsonl" --x epoch --out "$tmp/x.svg"
expect 2 "plot: --out $tmp/cls.jsonl is the log $tmp/cls.jsonl" -- "$bin" plot "$tmp/cls.jsonl" --out "$tmp/cls.jsonl"
mkdir "$tmp/dir.svg"
expect 2 "plot: --out $tmp/dir.svg: is a directory, not a regular file: refusing to replace it with a figure" -- \
    "$bin" plot "$tmp/cls.jsonl" --out "$tmp/dir.svg"
expect 1 "plot: --out $tmp/no/such.svg: directory $tmp/no" -- "$bin" plot "$tmp/cls.jsonl" --out "$tmp/no/such.svg"
ls "$tmp" | grep -q '\.tmp\.' && { failed=$((failed + 1)); echo "FAIL: a temporary file left behind"; } || passed=$((passed + 1))

# ---- attn-map ----
head -c 64 data/tinyshakespeare.txt >"$tmp/text.txt"
check "a vanilla window model" -- "$bin" train "${tiny[@]}" --model vanilla --attn window:w=6 --data "$tmp/small.txt" \
    --steps 2 --out "$tmp/win.ckpt"
check "attn-map of a window model" -- "$bin" attn-map --ckpt "$tmp/win.ckpt" --text "$tmp/text.txt" --layer 1 --head 1 \
    --out "$tmp/win.svg"
svgcheck "the map is exactly the window" -- window "$tmp/win.svg" 6
check "attn-map of the default xl model" -- "$bin" attn-map --ckpt "$tmp/lm.ckpt" --text "$tmp/text.txt" --layer 0 \
    --len 48 --out "$tmp/xl.svg"
expect 2 "attn-map: --layer 7: $tmp/win.ckpt has layers 0..1" -- "$bin" attn-map --ckpt "$tmp/win.ckpt" \
    --text "$tmp/text.txt" --layer 7 --out "$tmp/x.svg"
expect 2 "attn-map: --text is required" -- "$bin" attn-map --ckpt "$tmp/win.ckpt" --out "$tmp/x.svg"
expect 1 "attn-map: --text $tmp/nope.txt: cannot open: No such file" -- "$bin" attn-map --ckpt "$tmp/win.ckpt" \
    --text "$tmp/nope.txt" --out "$tmp/x.svg"
: >"$tmp/empty.txt"
expect 1 "attn-map: --text $tmp/empty.txt: the file is empty" -- "$bin" attn-map --ckpt "$tmp/win.ckpt" \
    --text "$tmp/empty.txt" --out "$tmp/x.svg"
expect 2 "attn-map: --len 64 exceeds the model's segment length 32" -- "$bin" attn-map --ckpt "$tmp/win.ckpt" \
    --text "$tmp/text.txt" --len 64 --out "$tmp/x.svg"
expect 2 "attn-map: --out $tmp/text.txt is one of its inputs" -- "$bin" attn-map --ckpt "$tmp/win.ckpt" \
    --text "$tmp/text.txt" --out "$tmp/text.txt"
cli_summary cli_pics_test
