#!/usr/bin/env bash
# CLI tests: exit codes (0 ok, 1 runtime, 2 usage), one-line errors that name the file or flag, no
# crashes on bad input, no file destroyed by a failing command, and a short happy path.
# usage: tests/cli_test.sh path/to/longctx
set -u
bin=$1
source "$(dirname "${BASH_SOURCE[0]}")/cli_lib.sh"

tiny=(--preset tiny --seg-len 32 --batch 4 --threads 2)
printf 'short' >"$tmp/short.txt"
: >"$tmp/empty.txt"
head -c 200000 data/tinyshakespeare.txt >"$tmp/small.txt"

# usage errors
expect 2 "unknown command" -- "$bin" frobnicate
expect 2 "unknown flag --bogus" -- "$bin" train --bogus
expect 2 "heads must be in" -- "$bin" train --heads 0
expect 2 "--dim 100 is not divisible by --heads 3" -- "$bin" train --dim 100 --heads 3
expect 2 "steps must be in" -- "$bin" train --steps -5
expect 2 "--steps expects a number" -- "$bin" train --steps ten
expect 2 "--lr needs a value" -- "$bin" train --lr
expect 2 "unknown preset" -- "$bin" train --preset huge
expect 2 "--ckpt is required" -- "$bin" eval
expect 2 "--split must be" -- "$bin" eval --ckpt x --split nope
expect 2 "expected a benchmark name" -- "$bin" bench
# bench attn: usage errors before any work, and one JSON line per length with the documented fields
check "mlm encoder with reversible layers and lsh" -- "$bin" train "${tiny[@]}" --objective mlm --reversible \
    --ffn-chunk 16 --attn "lsh:buckets=4,chunk=16" --data "$tmp/small.txt" --steps 2 --eval-every 0 --eval-bytes 500
expect 2 "unknown kind 'nope'" -- "$bin" bench attn --kind nope --len 64
expect 2 "option w=0" -- "$bin" bench attn --kind window:w=0 --len 64
expect 2 "--len must be a comma-separated list" -- "$bin" bench attn --len 64,abc
expect 2 "--len must be a comma-separated list" -- "$bin" bench attn --len 0
expect 2 "no kind in 'block:b=16' takes w=" -- "$bin" bench attn --kind block:b=16 --window 8 --len 64
expect 2 "one layer" -- "$bin" bench attn --kind "full;full" --len 64
check "bench attn --check accepts a good spec" -- "$bin" bench attn --kind block:b=64 --len 64,128 --check
check "bench attn --json" -- "$bin" bench attn --kind window:w=16 --len 64,100 --heads 2 --head-dim 16 --threads 2 \
    --reps 1 --json
cp "$tmp/out" "$tmp/attn.json"
check "bench attn: one JSON line per length" -- test "$(grep -c '^{.*}$' "$tmp/attn.json")" -eq 2
for field in '"impl":"longctx"' '"kind":"window:w=16"' '"len":100' '"fwd_ms":[0-9.]+' '"bwd_ms":[0-9.]+' '"peak_bytes":[0-9]+' \
    '"heads":2' '"head_dim":16' '"batch":1' '"causal":1' '"threads":[0-9]+' '"finite":1'; do
    check "bench attn JSON has $field" -- grep -Eq "$field" "$tmp/attn.json"
done
check "bench attn --window, groups, bidirectional" -- "$bin" bench attn --kind "1xfull+2xblock:b=8+window:w=4" \
    --window 3 --causal 0 --len 40 --heads 4 --head-dim 8 --reps 1 --json
cp "$tmp/out" "$tmp/attn.json"
check "bench attn: --window applied to the kinds that take w" -- grep -q '"kind":"1xfull+2xblock:b=8+window:w=4,w=3"' "$tmp/attn.json"
check "bench attn table" -- "$bin" bench attn --kind strided:s=4 --len 33 --heads 1 --head-dim 4 --reps 1
cp "$tmp/out" "$tmp/attn.txt"
check "bench attn table has a header and a row" -- test -n "$(grep us/token "$tmp/attn.txt")" -a -n "$(grep -E '^ +33 ' "$tmp/attn.txt")"
# data errors
expect 1 "nonexistent.txt: cannot open" -- "$bin" train "${tiny[@]}" --data "$tmp/nonexistent.txt"
expect 1 "empty.txt: file is empty" -- "$bin" train "${tiny[@]}" --data "$tmp/empty.txt"
expect 1 "is a directory" -- "$bin" train "${tiny[@]}" --data "$tmp"
expect 1 "short.txt.*too few" -- "$bin" train "${tiny[@]}" --data "$tmp/short.txt"
# data too small for the batch: refused before the model is built (it used to allocate for 65536 streams)
expect 1 "too few for 65536 streams" -- timeout 10 "$bin" train --data "$tmp/small.txt" --batch 65536
# devices and FIFOs are not data: refused at once (/dev/zero used to be read until memory ran out)
expect 1 "/dev/zero: is a character device" -- timeout 10 "$bin" train "${tiny[@]}" --data /dev/zero
mkfifo "$tmp/fifo"
expect 1 "fifo: is a FIFO" -- timeout 10 "$bin" train "${tiny[@]}" --data "$tmp/fifo"
# seeds: the whole 64-bit range, nothing else
expect 2 "--seed expects an integer in 0..18446744073709551615, got '-1'" -- "$bin" train --seed -1
expect 2 "--seed expects an integer" -- "$bin" train --seed 18446744073709551616
expect 2 "--seed expects an integer" -- "$bin" sample --ckpt x --seed 12abc

# happy path: train, eval, sample, resume
check "train tiny" -- "$bin" train "${tiny[@]}" --data "$tmp/small.txt" --steps 20 --eval-every 10 \
    --eval-bytes 2000 --out "$tmp/a.ckpt" --json
tail -1 "$tmp/out" >"$tmp/json"
check "train --json last line" -- grep -Eq '^\{"valid_bpc":[0-9.]+,"tokens_per_s":[0-9.]+,"steps":20,"params":[0-9]+,"valid_seconds":[0-9.]+\}$' "$tmp/json"
check "eval --json" -- "$bin" eval --ckpt "$tmp/a.ckpt" --data "$tmp/small.txt" --json
tail -1 "$tmp/out" >"$tmp/json"
check "eval json line" -- grep -Eq '^\{"bpc":[0-9.]+,"tokens":[0-9]+\}$' "$tmp/json"
head -c 20000 "$tmp/small.txt" >"$tmp/slice.txt" # 1,000 segments shorter than the trained 32
check "eval --split all" -- "$bin" eval --ckpt "$tmp/a.ckpt" --data "$tmp/slice.txt" --split all --seg-len 20
check "sample" -- "$bin" sample --ckpt "$tmp/a.ckpt" --prompt "ROMEO:" --tokens 40 --seed 3
cp "$tmp/out" "$tmp/sampled"
check "sample prints the prompt, 40 bytes and a newline" -- test "$(head -c 6 "$tmp/sampled")" = "ROMEO:" -a "$(wc -c <"$tmp/sampled")" -eq 47
"$bin" sample --ckpt "$tmp/a.ckpt" --tokens 30 --temperature 0 >"$tmp/g1" 2>/dev/null
"$bin" sample --ckpt "$tmp/a.ckpt" --tokens 30 --temperature 0 --seed 9 >"$tmp/g2" 2>/dev/null
check "greedy sampling is deterministic" -- cmp -s "$tmp/g1" "$tmp/g2"

# export: the weights without the AdamW moments, a third of the file; the copy samples as the checkpoint does,
# and a run resumed from it starts its moments at zero
cp "$tmp/a.ckpt" "$tmp/a.orig"
check "export --json" -- "$bin" export --ckpt "$tmp/a.ckpt" --out "$tmp/a.export" --json
tail -1 "$tmp/out" >"$tmp/json"
check "export json line" -- grep -Eq '^\{"tensors":[0-9]+,"dropped":[1-9][0-9]*,"bytes_in":[0-9]+,"bytes_out":[0-9]+\}$' "$tmp/json"
check "the export is under half the checkpoint's size" -- test "$(($(wc -c <"$tmp/a.export") * 2))" -lt "$(wc -c <"$tmp/a.ckpt")"
check "no moments in the export" -- bash -c "! grep -aq 'optim\.[mv]\.' \"$tmp/a.export\""
check "export leaves its input as it was" -- cmp -s "$tmp/a.ckpt" "$tmp/a.orig"
"$bin" sample --ckpt "$tmp/a.export" --tokens 30 --temperature 0 >"$tmp/g3" 2>/dev/null
check "the export samples as the checkpoint does" -- cmp -s "$tmp/g1" "$tmp/g3"
check "train --resume from an export" -- "$bin" train --resume "$tmp/a.export" --data "$tmp/small.txt" --steps 22 \
    --eval-every 0 --eval-bytes 500 --out "$tmp/a2.ckpt"
cp "$tmp/a.export" "$tmp/a.export2"
check "export of an export, in place" -- "$bin" export --ckpt "$tmp/a.export2" --out "$tmp/a.export2"
check "an export exported again is the same file" -- cmp -s "$tmp/a.export" "$tmp/a.export2"
expect 2 "export: --ckpt is required" -- "$bin" export --out "$tmp/x.st"
expect 2 "export: --out is required" -- "$bin" export --ckpt "$tmp/a.ckpt"
expect 1 "nope\.ckpt: cannot open" -- "$bin" export --ckpt "$tmp/nope.ckpt" --out "$tmp/x.st"
expect 1 "small\.txt: not a safetensors checkpoint" -- "$bin" export --ckpt "$tmp/small.txt" --out "$tmp/x.st"
# a safetensors file written by PyTorch (a parity fixture), not by longctx
expect 1 "bigbird_itc\.safetensors: not a longctx checkpoint" -- "$bin" export \
    --ckpt "$(dirname "${BASH_SOURCE[0]}")/fixtures/bigbird_itc.safetensors" --out "$tmp/x.st"
expect 1 "nodir/x\.st: directory" -- "$bin" export --ckpt "$tmp/a.ckpt" --out "$tmp/nodir/x.st"
mkdir -p "$tmp/adir"
expect 2 "adir: is a directory" -- "$bin" export --ckpt "$tmp/a.ckpt" --out "$tmp/adir"
check "no file from the refused exports" -- test ! -e "$tmp/x.st"
check "the refused exports left the checkpoint as it was" -- cmp -s "$tmp/a.ckpt" "$tmp/a.orig"

# resume through the CLI: 20 steps == 10 + resume + 10, compared byte for byte
check "train 10 of 20" -- "$bin" train "${tiny[@]}" --data "$tmp/small.txt" --steps 20 --stop-after 10 \
    --eval-every 10 --eval-bytes 2000 --out "$tmp/half.ckpt"
check "resume to 20" -- "$bin" train --resume "$tmp/half.ckpt" --data "$tmp/small.txt" --out "$tmp/b.ckpt"
check "resumed checkpoint equals uninterrupted one" -- cmp -s "$tmp/a.ckpt" "$tmp/b.ckpt"
expect 2 "--dim cannot be combined with --resume" -- "$bin" train --resume "$tmp/half.ckpt" --dim 32
# --precision bf16: recorded in the checkpoint, kept by --resume (bit for bit), changeable at resume and eval
expect 2 "--precision must be fp32 or bf16, got 'fp16'" -- "$bin" train --precision fp16
check "train bf16 20" -- "$bin" train "${tiny[@]}" --data "$tmp/small.txt" --steps 20 --eval-every 10 \
    --eval-bytes 2000 --precision bf16 --out "$tmp/bf.ckpt"
check "bf16 recorded in the checkpoint" -- grep -aq '"precision":"bf16"' "$tmp/bf.ckpt"
check "train bf16 10 of 20" -- "$bin" train "${tiny[@]}" --data "$tmp/small.txt" --steps 20 --stop-after 10 \
    --eval-every 10 --eval-bytes 2000 --precision bf16 --out "$tmp/bfhalf.ckpt"
check "resume bf16 to 20" -- "$bin" train --resume "$tmp/bfhalf.ckpt" --data "$tmp/small.txt" --out "$tmp/bf2.ckpt"
check "resumed bf16 checkpoint equals the uninterrupted one" -- cmp -s "$tmp/bf.ckpt" "$tmp/bf2.ckpt"
check "resume with --precision fp32" -- "$bin" train --resume "$tmp/bfhalf.ckpt" --data "$tmp/small.txt" \
    --precision fp32 --out "$tmp/bf3.ckpt"
check "fp32 recorded after the switch" -- grep -aq '"precision":"fp32"' "$tmp/bf3.ckpt"
check "eval --precision bf16" -- "$bin" eval --ckpt "$tmp/a.ckpt" --data "$tmp/small.txt" --precision bf16 --json
expect 2 "eval: --precision must be fp32 or bf16" -- "$bin" eval --ckpt "$tmp/a.ckpt" --precision half
# a seed of 2^64-1 trains, saves, resumes (the checkpoint keeps it) and samples
check "train --seed 2^64-1" -- "$bin" train "${tiny[@]}" --data "$tmp/small.txt" --steps 2 --stop-after 1 \
    --eval-every 0 --eval-bytes 500 --seed 18446744073709551615 --out "$tmp/seed.ckpt"
check "resume a 2^64-1 seed" -- "$bin" train --resume "$tmp/seed.ckpt" --data "$tmp/small.txt" --eval-bytes 500 \
    --out "$tmp/seed2.ckpt"
check "sample --seed 2^64-1" -- "$bin" sample --ckpt "$tmp/seed2.ckpt" --tokens 5 --seed 18446744073709551615

# a diverged run stops with exit 1 and one clear line, and never overwrites a good checkpoint with NaN
diverge=(--model vanilla --layers 1 --dim 32 --heads 2 --ffn 64 --seg-len 32 --batch 2 --lr 10 --weight-decay 10
         --warmup 0 --data "$tmp/small.txt" --eval-every 0 --eval-bytes 500 --threads 2)
expect 1 "^longctx: error: training diverged at step [0-9]+: (loss|gradient norm) is (nan|inf|-inf) \(try a lower --lr\)$" \
    -- "$bin" train "${diverge[@]}" --steps 60 --out "$tmp/nan.ckpt"
check "no checkpoint from a diverged run" -- test ! -e "$tmp/nan.ckpt"
expect 1 "^longctx: error: training diverged at step [0-9]+: " -- "$bin" train "${diverge[@]}" --steps 60 \
    --attn routing:clusters=2
check "train 2 steps before divergence" -- "$bin" train "${diverge[@]}" --steps 60 --stop-after 2 --out "$tmp/c.ckpt"
cp "$tmp/c.ckpt" "$tmp/c0.ckpt"
expect 1 "training diverged at step" -- "$bin" train --resume "$tmp/c.ckpt" --data "$tmp/small.txt" --out "$tmp/c.ckpt"
check "the diverged resume left the good checkpoint as it was" -- cmp -s "$tmp/c.ckpt" "$tmp/c0.ckpt"
# sampling from NaN weights: a clear error, no NUL bytes (a checkpoint whose first tensor bytes are NaN)
cp "$tmp/c0.ckpt" "$tmp/nanw.ckpt"
hdr=$(od -An -tu8 -N8 "$tmp/nanw.ckpt" | tr -d ' ')
head -c 4096 /dev/zero | tr '\0' '\377' | dd of="$tmp/nanw.ckpt" bs=1 seek=$((8 + hdr)) conv=notrunc status=none
expect 1 "nanw.ckpt.*NaN|NaN.*nanw.ckpt|sampling: .*NaN" -- "$bin" sample --ckpt "$tmp/nanw.ckpt" --tokens 5
check "sampling printed no NUL byte" -- test "$(tr -cd '\000' <"$tmp/out" | wc -c)" -eq 0

# checkpoint errors, and no file destroyed by a failing command
cp "$tmp/a.ckpt" "$tmp/keep.ckpt"
head -c 1000 "$tmp/a.ckpt" >"$tmp/trunc.ckpt"
expect 1 "trunc.ckpt" -- "$bin" eval --ckpt "$tmp/trunc.ckpt" --data "$tmp/small.txt"
expect 1 "trunc.ckpt" -- "$bin" train --resume "$tmp/trunc.ckpt" --data "$tmp/small.txt" --out "$tmp/trunc.ckpt"
check "failed resume left the file as it was" -- test "$(wc -c <"$tmp/trunc.ckpt")" -eq 1000
printf 'hello, not a checkpoint at all' >"$tmp/text.ckpt"
expect 1 "text.ckpt" -- "$bin" sample --ckpt "$tmp/text.ckpt"
expect 1 "missing.ckpt" -- "$bin" sample --ckpt "$tmp/missing.ckpt"
expect 1 "short.txt.*too few" -- "$bin" train --resume "$tmp/keep.ckpt" --data "$tmp/short.txt" --out "$tmp/keep.ckpt"
check "failed training left the existing checkpoint intact" -- cmp -s "$tmp/a.ckpt" "$tmp/keep.ckpt"
python_free_corrupt() { # flip bytes inside the JSON header
    cp "$tmp/a.ckpt" "$tmp/corrupt.ckpt"
    printf '\x00\x00\x00' | dd of="$tmp/corrupt.ckpt" bs=1 seek=30 conv=notrunc status=none
}
python_free_corrupt
expect 1 "corrupt.ckpt" -- "$bin" eval --ckpt "$tmp/corrupt.ckpt" --data "$tmp/small.txt"

# attention kinds from the command line: every kind trains a few steps in the decoder (when it has a
# causal mode) and in the masked-LM encoder, and its checkpoint evaluates
kinds_lm=("window:w=4,dil=1/2" "2xblock:b=8+2xstrided:s=4" "compressed:w=4,s=4" "lsh:buckets=4,chunk=8"
          "routing:clusters=2" "window:w=4,global=2" "bigbird:b=8,r=1" "2xbigbird:variant=etc,g=2,b=8+bigbird:b=4")
kinds_mlm=("${kinds_lm[@]}" "linformer:k=8" "2xfull+2xwindow:w=3")
for spec in "${kinds_lm[@]}"; do
    check "train --attn $spec" -- "$bin" train "${tiny[@]}" --model vanilla --attn "$spec" --data "$tmp/small.txt" \
        --steps 2 --eval-every 0 --eval-bytes 500 --out "$tmp/k.ckpt"
    check "eval --attn $spec" -- "$bin" eval --ckpt "$tmp/k.ckpt" --data "$tmp/small.txt" --split test
done
for spec in "${kinds_mlm[@]}"; do
    check "train mlm --attn $spec" -- "$bin" train "${tiny[@]}" --objective mlm --attn "$spec" --data "$tmp/small.txt" \
        --steps 2 --eval-every 0 --eval-bytes 500 --out "$tmp/k.ckpt" --json
    cp "$tmp/out" "$tmp/mlm.out"
    check "mlm json has masked_accuracy ($spec)" -- grep -Eq '"masked_accuracy":[0-9.]+' "$tmp/mlm.out"
done
check "xl + window + tied qk + shared attention" -- "$bin" train "${tiny[@]}" --attn "window:w=8" --share-qk 2 \
    --share-attn 2 --data "$tmp/small.txt" --steps 2 --eval-every 0
check "reversible + chunked ffn + extra tokens" -- "$bin" train "${tiny[@]}" --model vanilla --reversible --ffn-chunk 16 \
    --extra-tokens 2 --attn "window:w=4,global=2" --data "$tmp/small.txt" --steps 2 --eval-every 0
check "mlm encoder with reversible layers and lsh" -- "$bin" train "${tiny[@]}" --objective mlm --reversible \
    --ffn-chunk 16 --attn "lsh:buckets=4,chunk=16" --data "$tmp/small.txt" --steps 2 --eval-every 0 --eval-bytes 500
expect 2 "unknown kind 'nope'" -- "$bin" train "${tiny[@]}" --attn nope
expect 2 "option w=0" -- "$bin" train "${tiny[@]}" --attn window:w=0
expect 2 "linformer is bidirectional only" -- "$bin" train "${tiny[@]}" --model vanilla --attn linformer:k=8
expect 2 "head groups cover 3 heads" -- "$bin" train "${tiny[@]}" --attn 3xfull
expect 2 "objective must be clm or mlm" -- "$bin" train "${tiny[@]}" --objective nsp
expect 2 "sampling needs a causal model" -- "$bin" sample --ckpt "$tmp/k.ckpt"

# ---- global tokens on sequences shorter than their positions --------------------------------------
# As in Longformer, a global position the current sequence lacks is simply not global there: the last
# evaluation segment, a one-byte prompt and the final validation before the save must run, not abort.
gtiny=(--model vanilla --layers 1 --dim 32 --heads 2 --ffn 64 --seg-len 64 --batch 2 --threads 2
       --attn window:w=16,global=2)
head -c 66 data/tinyshakespeare.txt >"$tmp/g66.txt"    # 65 predicted bytes: one segment of 64, one of 1
head -c 660 data/tinyshakespeare.txt >"$tmp/g660.txt"  # nanogpt split: a 66-byte validation split
check "train global=2, final validation ends in a 1-byte segment" -- "$bin" train "${gtiny[@]}" --steps 2 \
    --data "$tmp/g660.txt" --splits nanogpt --out "$tmp/g1.ckpt"
check "that training saved its checkpoint" -- test -s "$tmp/g1.ckpt"
check "train global=2 for eval and sample" -- "$bin" train "${gtiny[@]}" --steps 2 --data "$tmp/small.txt" \
    --eval-every 0 --eval-bytes 500 --out "$tmp/g.ckpt"
check "eval global=2 on a 66-byte file" -- "$bin" eval --ckpt "$tmp/g.ckpt" --data "$tmp/g66.txt" --split all
check "sample global=2 without a prompt" -- "$bin" sample --ckpt "$tmp/g.ckpt" --tokens 5
check "sample global=2 from a 1-byte prompt" -- "$bin" sample --ckpt "$tmp/g.ckpt" --prompt A --tokens 5
# ----------------------------------------------------------------------------------------------------

cli_summary cli_test
