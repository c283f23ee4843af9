#!/usr/bin/env bash
# CLI consistency (issue 14, item 4), on tiny shapes: every `bench` prints a table by default and JSON
# lines with --json; every --help exits 0, ends with a newline and lists only the flags its command uses
# (those of a shared table it does not use are refused with a line saying why); the attention specs of
# docs/guides/attention.md's table train as the table says (rows marked *vanilla* need --model vanilla, and are
# refused without it); training throughput leaves validation out (tokens/s against the --log lines'
# elapsed time minus earlier validation passes); --log FILE writes one flushed JSON line per step, appended
# to by --resume, with one error line when FILE cannot be opened; sample reads its prompt from a file or
# stdin and has an interactive mode whose turns equal separate sample commands.
# usage: tests/cli_consistency_test.sh path/to/longctx
set -u
bin=$1
cli_one_line_errors=0
source "$(dirname "${BASH_SOURCE[0]}")/cli_lib.sh"
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)

head -c 60000 "$root/data/tinyshakespeare.txt" >"$tmp/small.txt"
lm=(--data "$tmp/small.txt" --layers 1 --dim 16 --heads 2 --ffn 32 --seg-len 16 --batch 2 --threads 1 --warmup 2)
# one_line CODE PATTERN -- command: expect with stderr of one line (the contract for errors)
one_line() { cli_one_line_errors=1; expect "$@"; cli_one_line_errors=0; }
json_lines() { grep -c '^{.*}$' "$1"; }

# ---- 1. bench: a table by default, one JSON line per measurement with --json
# bench_runs NAME -- command...: the command succeeds as it is and with --json; its outputs are kept as
# $tmp/bench-NAME.txt and $tmp/bench-NAME.json
bench_runs() {
    local name=$1; shift 2
    check "bench $name" -- "$@"
    cp "$tmp/out" "$tmp/bench-$name.txt"
    check "bench $name --json" -- "$@" --json
    cp "$tmp/out" "$tmp/bench-$name.json"
}
bench_runs train -- "$bin" bench train --layers 1 --dim 16 --heads 2 --ffn 32 --seg-len 16 --batch 2 --steps 1 --warmup 0 \
    --threads 1
check "bench train: a table (header and a row), no JSON" -- test "$(grep -c 'tokens/s' "$tmp/bench-train.txt")" -ge 1 -a \
    "$(json_lines "$tmp/bench-train.txt")" -eq 0 -a "$(grep -cE '^ +[0-9.]+ +[0-9]+ ' "$tmp/bench-train.txt")" -eq 1
check "bench train --json: one JSON line, nothing else" -- test "$(json_lines "$tmp/bench-train.json")" -eq 1 -a "$(wc -l <"$tmp/bench-train.json")" -eq 1
check "bench train --json keeps its fields" -- grep -Eq '"bench":"train".*"ms_per_step_median":[0-9.]+,"tokens_per_s":[0-9.]+' "$tmp/bench-train.json"
xe=("$bin" bench xl-eval --layers 1 --dim 16 --heads 2 --ffn 32 --seg-len 8 --attn-len 16,24 --tokens 2 --segments 1 --reps 1 --threads 1)
bench_runs xl-eval -- "${xe[@]}"
check "bench xl-eval: a table row per length, no JSON" -- test "$(grep -cE '^ +(16|24) ' "$tmp/bench-xl-eval.txt")" -eq 2 -a "$(json_lines "$tmp/bench-xl-eval.txt")" -eq 0
check "bench xl-eval --json: one JSON line per length" -- test "$(json_lines "$tmp/bench-xl-eval.json")" -eq 2 -a "$(wc -l <"$tmp/bench-xl-eval.json")" -eq 2
check "bench xl-eval --json keeps its fields" -- grep -q '"attn_len":24,"xl_ms_per_token":' "$tmp/bench-xl-eval.json"
one_line 2 "bench xl-eval: --attn-len 8 must exceed --eval-seg 8" -- "${xe[@]}" --attn-len 16,8
check "bench xl-eval: a bad length fails before the table" -- test "$(wc -c <"$tmp/out")" -eq 0  # read before check rewrites it
bench_runs attn -- "$bin" bench attn --kind window:w=4 --len 32,48 --heads 1 --head-dim 4 --reps 1 --threads 1
check "bench attn: a table, no JSON" -- test "$(grep -cE '^ +(32|48) ' "$tmp/bench-attn.txt")" -eq 2 -a "$(json_lines "$tmp/bench-attn.txt")" -eq 0
check "bench attn --json: one JSON line per length, nothing else" -- test "$(json_lines "$tmp/bench-attn.json")" -eq 2 -a "$(wc -l <"$tmp/bench-attn.json")" -eq 2
if [ -d "$root/data/bbc-news-summary/articles" ]; then
    bench_runs hibert -- "$bin" bench hibert --data "$root/data/bbc-news-summary" --layers 1 --dim 16 --heads 2 --ffn 32 \
        --seg-len 64 --docs 2 --steps 2 --warmup 1 --threads 1
    check "bench hibert: a table, no JSON" -- test "$(grep -c 'HIBERT bytes/s' "$tmp/bench-hibert.txt")" -eq 1 -a "$(json_lines "$tmp/bench-hibert.txt")" -eq 0
    check "bench hibert --json: one JSON line with its fields" -- test "$(json_lines "$tmp/bench-hibert.json")" -eq 1 -a \
        -n "$(grep '"bench":"hibert".*"hibert_bytes_per_s":[0-9.]*.*"lm_tokens_per_s":' "$tmp/bench-hibert.json")"
    # memory is planned for the largest batch the bench forms, with no sentence decoder: it once planned every
    # document read at once plus a decoder (2.8 GB for this run); AddressSanitizer needs more address space
    if [ "${LC_VARIANT:-release}" != asan ]; then
        check "bench hibert: 56 documents in batches of 8 within 1 GB of address space" -- \
            bash -c 'ulimit -v 1000000 && "$@"' _ "$bin" bench hibert --data "$root/data/bbc-news-summary" --layers 1 \
            --dim 16 --heads 2 --ffn 32 --seg-len 64 --docs 8 --steps 6 --warmup 1 --threads 1
    fi
fi
check "bench --help" -- "$bin" bench --help
cp "$tmp/out" "$tmp/bench-help.txt"
check "bench --help: tables and --json" -- grep -q -- "--json" "$tmp/bench-help.txt"

# ---- 2. --help: exit 0, a final newline, only the flags the command uses
helps=("train" "train --task classify" "eval" "eval --task summarize" "eval --task classify" "sample" "bench"
       "bench train" "bench xl-eval" "bench attn" "bench hibert" "listops" "predict" "hibert" "hibert pretrain"
       "hibert finetune" "summarize")
for h in "${helps[@]}"; do
    # shellcheck disable=SC2086
    "$bin" $h --help >"$tmp/help.txt" 2>"$tmp/help.err"
    rc=$?
    check "$h --help: exit 0, on stdout, ends with a newline" -- test "$rc" -eq 0 -a -s "$tmp/help.txt" -a ! -s "$tmp/help.err" \
        -a "$(tail -c 1 "$tmp/help.txt" | od -An -c | tr -d ' ')" = '\n'
    cp "$tmp/help.txt" "$tmp/help $h.txt"
done
flags_of() { grep -oE '^  --[a-z-]+' "$tmp/help $1.txt" | tr -d ' '; }
lacks() { # lacks HELP FLAG...: none of the flags in that help text
    local h=$1 f; shift
    for f in "$@"; do if flags_of "$h" | grep -qx -- "$f"; then echo "$h --help lists $f" >&2; return 1; fi; done
}
has() { local h=$1 f; shift; for f in "$@"; do flags_of "$h" | grep -qx -- "$f" || { echo "$h --help lacks $f" >&2; return 1; }; done; }
check "train --task classify --help: no LM-only flags" -- lacks "train --task classify" --seg-len --model --mem-len --clamp-len \
    --same-length --shared-uv --untied --share-qk --reversible --ffn-chunk --extra-tokens
check "train --task classify --help: its own and the encoder's flags" -- has "train --task classify" --valid --max-len --pool \
    --layers --dim --attn --share-attn --dropout --lr --log --objective
check "train --help: the LM's flags, --log and --task" -- has "train" --seg-len --mem-len --objective --log --task
check "hibert finetune --help: no pretrain-only flags" -- lacks "hibert finetune" --docs --eval-docs --dec-layers --dec-dim \
    --dec-heads --dec-ffn --dec-attn
check "hibert pretrain --help: no finetune-only flags" -- lacks "hibert pretrain" --data --labels
check "hibert finetune --help: its own flags" -- has "hibert finetune" --data --labels --log --sent-layers
check "hibert --help: each stage's flags under its name" -- grep -q '^pretrain only:' "$tmp/help hibert.txt"
check "bench xl-eval --help: no flags it cannot use" -- lacks "bench xl-eval" --model --mem-len --same-length --dropout --objective
check "sample --help: the prompt sources" -- has "sample" --prompt --prompt-file --interactive
one_line 2 "train --task classify: --seg-len does not apply to a classifier" -- "$bin" train --task classify --seg-len 8
one_line 2 "hibert finetune: --dec-layers belongs to hibert pretrain" -- "$bin" hibert finetune --dec-layers 2 --out "$tmp/x.st"
one_line 2 "hibert finetune: --eval-docs belongs to hibert pretrain" -- "$bin" hibert finetune --eval-docs 2 --out "$tmp/x.st"
one_line 2 "hibert pretrain: --labels belongs to hibert finetune" -- "$bin" hibert pretrain --labels greedy --out "$tmp/x.st"
one_line 2 "bench xl-eval: --model does not apply" -- "$bin" bench xl-eval --model vanilla
one_line 2 "train: --task must be lm, classify, hibert or seq2seq, got 'bogus'" -- "$bin" train --task bogus

# ---- 3. docs/guides/attention.md's spec table: *vanilla* rows need --model vanilla (and are refused without it)
spec_rows=$(awk '/^\| spec \| meaning \|/ { on = 1; next } on && !/^\|/ { exit } on && !/^\| ---/' "$root/docs/guides/attention.md")
n_rows=0
while IFS= read -r row; do
    spec=$(printf '%s' "$row" | sed -E 's/^\| `([^`]+)`.*/\1/')
    extra=$(printf '%s' "$row" | sed -nE 's/.*with `(--extra-tokens [0-9]+)`.*/\1/p')
    layers=$(( $(printf '%s' "$spec" | tr -cd ';' | wc -c) + 1 ))
    flags=(--attn "$spec" --layers "$layers" --dim 16 --heads 8 --ffn 16 --seg-len 256 --batch 1 --steps 1 --warmup 0
           --eval-every 0 --eval-bytes 300 --threads 1 --data "$tmp/small.txt")
    # shellcheck disable=SC2206
    [ -n "$extra" ] && flags+=($extra)
    case "$row" in *"--objective mlm"*) flags+=(--objective mlm) ;; esac
    n_rows=$((n_rows + 1))
    case "$row" in
    *'*vanilla*'*)
        one_line 2 "vanilla" -- "$bin" train "${flags[@]}"
        check "docs/guides/attention.md: $spec trains with --model vanilla" -- "$bin" train "${flags[@]}" --model vanilla ;;
    *) check "docs/guides/attention.md: $spec trains as written" -- "$bin" train "${flags[@]}" ;;
    esac
done <<<"$spec_rows"
check "docs/guides/attention.md: the spec table was read" -- test "$n_rows" -ge 10

# ---- 4 and 5. --log: one JSON line per step; tokens/s over training time only
check "train --log" -- "$bin" train "${lm[@]}" --steps 6 --eval-every 2 --eval-bytes 0 --log "$tmp/lm.jsonl" --out "$tmp/lm.ckpt" --json
cp "$tmp/out" "$tmp/lm.out"
check "train --log: one JSON line per step" -- test "$(json_lines "$tmp/lm.jsonl")" -eq 6 -a "$(wc -l <"$tmp/lm.jsonl")" -eq 6
check "train --log: the fields of a step" -- grep -Eq '^\{"step":1,"loss":[0-9.e+-]+,"lr":[0-9.e+-]+,"tokens_per_s":[0-9.]+,"elapsed_s":[0-9.]+\}$' "$tmp/lm.jsonl"
check "train --log: validation on steps 2, 4 and 6 (the final pass)" -- test "$(grep -c '"valid_bpc":[0-9.]*,"valid_bytes":[0-9]*,"valid_seconds":' "$tmp/lm.jsonl")" -eq 3 -a \
    -n "$(grep '^{"step":6,.*"valid_bpc"' "$tmp/lm.jsonl")"
# valid_bytes: what each pass read; --eval-bytes cuts the periodic passes only, the final one reads the whole split
split_bytes=$(grep -o '"valid_bytes":[0-9]*' "$tmp/lm.jsonl" | sort -u)
check "train --log: valid_bytes is the whole split with --eval-bytes 0" -- test "$(printf '%s\n' "$split_bytes" | wc -l)" -eq 1 \
    -a "${split_bytes#*:}" -gt 64
check "train --log --eval-bytes 64" -- "$bin" train "${lm[@]}" --steps 4 --eval-every 2 --eval-bytes 64 --log "$tmp/lm64.jsonl"
check "train --log: a periodic pass reads --eval-bytes, the final one the split" -- test \
    "$(grep '^{"step":2,' "$tmp/lm64.jsonl" | grep -o '"valid_bytes":[0-9]*')" = '"valid_bytes":64' -a \
    "$(grep '^{"step":4,' "$tmp/lm64.jsonl" | grep -o '"valid_bytes":[0-9]*')" = "$split_bytes"
# step k: tokens_per_s x (elapsed_s - the validation seconds of earlier steps) = k x batch x seg-len
check "train: tokens/s leaves validation out" -- awk -F'[:,]' '
    { gsub(/[{}]/, ""); for (i = 1; i < NF; i++) v[$i] = $(i + 1)
      want = v["\"step\""] * 2 * 16; got = v["\"tokens_per_s\""] * (v["\"elapsed_s\""] - before)
      if (got < want * 0.97 - 2 || got > want * 1.03 + 2) { print "step " v["\"step\""] ": " got " tokens, want " want; bad = 1 }
      if ("\"valid_seconds\"" in v) { before += v["\"valid_seconds\""]; total += v["\"valid_seconds\""] }
      delete v }
    END { if (total <= 0) { print "no validation time"; bad = 1 } exit bad }' "$tmp/lm.jsonl"
check "train --json: tokens/s of the last step, valid_seconds" -- test -n "$(tail -1 "$tmp/lm.out" | grep -E '"params":[0-9]+,"valid_seconds":[0-9.]+\}$')" \
    -a "$(tail -1 "$tmp/lm.out" | grep -oE '"tokens_per_s":[0-9.]+')" = "$(tail -1 "$tmp/lm.jsonl" | grep -oE '"tokens_per_s":[0-9.]+')"
check "train --resume --log appends" -- "$bin" train --resume "$tmp/lm.ckpt" --steps 8 --threads 1 --log "$tmp/lm.jsonl"
check "train --resume --log: steps 7 and 8 after the first 6" -- test "$(wc -l <"$tmp/lm.jsonl")" -eq 8 -a \
    "$(sed -n 7p "$tmp/lm.jsonl" | grep -oE '^\{"step":[0-9]+')" = '{"step":7'
check "train --log: a new run starts the file afresh" -- "$bin" train "${lm[@]}" --steps 2 --eval-every 0 --eval-bytes 100 --log "$tmp/lm.jsonl"
check "train --log: a new run's lines only" -- test "$(wc -l <"$tmp/lm.jsonl")" -eq 2
one_line 1 "train: --log $tmp/nodir/x.jsonl: cannot open for writing" -- "$bin" train "${lm[@]}" --steps 2 --log "$tmp/nodir/x.jsonl"
# flushed as it goes: lines are there while the run is still going
"$bin" train "${lm[@]}" --steps 100000 --eval-every 0 --log "$tmp/live.jsonl" >/dev/null 2>&1 &
pid=$!
for _ in $(seq 100); do [ "$(cat "$tmp/live.jsonl" 2>/dev/null | wc -l)" -ge 3 ] && break; sleep 0.1; done
check "train --log: lines written while the run goes on" -- test "$(wc -l <"$tmp/live.jsonl")" -ge 3 -a -d "/proc/$pid"
kill -INT "$pid" 2>/dev/null
wait "$pid" 2>/dev/null
check "train --log: every line whole after SIGINT" -- test "$(json_lines "$tmp/live.jsonl")" -eq "$(wc -l <"$tmp/live.jsonl")"

# classification: --log and valid_seconds
printf 'label\ttext\n' >"$tmp/train.tsv"
for i in $(seq 1 12); do printf 'pos\tgood fine great %d good\nneg\tbad awful poor %d bad\n' "$i" "$i"; done >>"$tmp/train.tsv"
head -9 "$tmp/train.tsv" >"$tmp/valid.tsv"
cl=("$bin" train --task classify --data "$tmp/train.tsv" --valid "$tmp/valid.tsv" --layers 1 --dim 16 --heads 2 --ffn 32
    --max-len 32 --batch 4 --warmup 1 --threads 1)
check "train --task classify --log" -- "${cl[@]}" --steps 4 --eval-every 2 --out "$tmp/c.st" --log "$tmp/c.jsonl" --json
cp "$tmp/out" "$tmp/c.out"
check "classify --log: one line per step, validation on steps 2 and 4" -- test "$(json_lines "$tmp/c.jsonl")" -eq 4 -a \
    "$(grep -c '"valid_accuracy":[0-9.]*,"valid_seconds":[0-9.]*}$' "$tmp/c.jsonl")" -eq 2
check "classify --json: valid_seconds within seconds" -- awk -F'[:,]' '{ gsub(/[{}]/, ""); for (i = 1; i < NF; i++) v[$i] = $(i + 1) }
    END { exit !(("\"valid_seconds\"" in v) && v["\"valid_seconds\""] <= v["\"seconds\""] + 0.05 && v["\"tokens_per_s\""] > 0) }' <(tail -1 "$tmp/c.out")
check "classify --resume --log appends" -- "$bin" train --task classify --data "$tmp/train.tsv" --valid "$tmp/valid.tsv" \
    --resume "$tmp/c.st.last" --out "$tmp/c.st" --steps 6 --eval-every 2 --threads 1 --log "$tmp/c.jsonl"
check "classify --resume --log: 6 lines" -- test "$(wc -l <"$tmp/c.jsonl")" -eq 6 -a -n "$(sed -n 5p "$tmp/c.jsonl" | grep '^{"step":5,')"
one_line 1 "train --task classify: --log $tmp/nodir/c.jsonl: cannot open" -- "${cl[@]}" --steps 2 --out "$tmp/c2.st" --log "$tmp/nodir/c.jsonl"

# HIBERT: --log and valid_seconds, both stages (a corpus of 20 documents of 4 to 6 sentences)
news_corpus 4 3 3
hs=(--sent-layers 1 --sent-dim 16 --sent-heads 2 --sent-ffn 32 --doc-layers 1 --doc-dim 16 --doc-heads 2 --doc-ffn 32
    --dec-layers 1 --dec-dim 16 --dec-heads 2 --dec-ffn 32 --max-sent-len 48 --max-sents 6 --batch 2 --threads 1 --warmup 1)
check "hibert pretrain --log" -- "$bin" hibert pretrain --docs "$tmp/docs" "${hs[@]}" --steps 4 --eval-every 2 --out "$tmp/p.st" \
    --log "$tmp/p.jsonl" --json
cp "$tmp/out" "$tmp/p.out"
check "pretrain --log: 4 lines, valid_bpb on steps 2 and 4" -- test "$(json_lines "$tmp/p.jsonl")" -eq 4 -a \
    "$(grep -c '"valid_bpb":[0-9.]*,"valid_seconds":[0-9.]*}$' "$tmp/p.jsonl")" -eq 2
check "pretrain --json: bytes_per_s and valid_seconds" -- grep -Eq '"bytes_per_s":[0-9.]+,.*"valid_seconds":[0-9.]+\}$' <(tail -1 "$tmp/p.out")
check "hibert finetune --log" -- "$bin" hibert finetune --data "$tmp/bbc" --init "$tmp/p.st" --batch 2 --threads 1 --warmup 1 \
    --steps 2 --eval-every 1 --out "$tmp/f.st" --log "$tmp/f.jsonl" --json
cp "$tmp/out" "$tmp/f.out"
check "finetune --log: ROUGE on each step" -- test "$(grep -c '"valid_rouge1":[0-9.]*,"valid_rouge2":[0-9.]*,"valid_rougeL":[0-9.]*,"valid_seconds":' "$tmp/f.jsonl")" -eq 2
check "finetune --json: bytes_per_s and valid_seconds" -- grep -Eq '"bytes_per_s":[0-9.]+,"valid_seconds":[0-9.]+' <(tail -1 "$tmp/f.out")
check "hibert finetune --resume --log appends" -- "$bin" hibert finetune --resume "$tmp/f.st.last" --steps 3 --threads 1 --log "$tmp/f.jsonl"
check "finetune --resume --log: 3 lines" -- test "$(wc -l <"$tmp/f.jsonl")" -eq 3
one_line 1 "hibert pretrain: --log $tmp/nodir/p.jsonl: cannot open" -- "$bin" hibert pretrain --docs "$tmp/docs" "${hs[@]}" --steps 1 \
    --out "$tmp/p2.st" --log "$tmp/nodir/p.jsonl"

# ---- 6. sample: --prompt-file, stdin, --interactive (turn i = its own sample with seed + i)
sm=("$bin" sample --ckpt "$tmp/lm.ckpt" --tokens 12 --threads 1)
check "sample --prompt" -- "${sm[@]}" --prompt "ROMEO:"
cp "$tmp/out" "$tmp/s1.txt"
printf 'ROMEO:' >"$tmp/prompt.txt"
check "sample --prompt-file" -- "${sm[@]}" --prompt-file "$tmp/prompt.txt"
cp "$tmp/out" "$tmp/s0.txt"
check "sample --prompt-file: as --prompt" -- cmp "$tmp/s0.txt" "$tmp/s1.txt"
check "sample --prompt-file - (stdin)" -- bash -c '"$@" <"'"$tmp/prompt.txt"'" >"'"$tmp/s2.txt"'"' _ "${sm[@]}" --prompt-file -
check "sample --prompt-file -: as --prompt" -- cmp "$tmp/s2.txt" "$tmp/s1.txt"
check "sample --seed 2 --prompt JULIET:" -- "${sm[@]}" --prompt "JULIET:" --seed 2
cp "$tmp/out" "$tmp/s3.txt"
printf 'ROMEO:\nJULIET:\n' >"$tmp/lines.txt"
check "sample --interactive: exit 0 at end of input" -- bash -c '"$@" <"'"$tmp/lines.txt"'" >"'"$tmp/i.out"'" 2>"'"$tmp/i.err"'"' _ "${sm[@]}" --interactive
check "sample --interactive: a marker per prompt, and one at end of input" -- test "$(grep -o '> ' "$tmp/i.err" | wc -l)" -eq 3
{ tail -c +7 "$tmp/s1.txt"; tail -c +8 "$tmp/s3.txt"; } >"$tmp/i.want" # the prompts are not echoed
check "sample --interactive: each turn as its own sample command (seed + turn)" -- cmp "$tmp/i.out" "$tmp/i.want"
check "sample --interactive: empty input" -- bash -c '"$@" </dev/null' _ "${sm[@]}" --interactive
one_line 2 "sample: give one of --prompt, --prompt-file and --interactive" -- "${sm[@]}" --prompt x --interactive
one_line 2 "sample: give one of --prompt, --prompt-file and --interactive" -- "${sm[@]}" --prompt x --prompt-file "$tmp/prompt.txt"
one_line 1 "sample: --prompt-file $tmp/none.txt: cannot open: No such file or directory$" -- "${sm[@]}" --prompt-file "$tmp/none.txt"
one_line 1 "sample: --prompt-file $tmp: is a directory, not a regular file" -- "${sm[@]}" --prompt-file "$tmp"
check "an MLM checkpoint" -- "$bin" train "${lm[@]}" --objective mlm --steps 1 --eval-every 0 --eval-bytes 100 --out "$tmp/mlm.ckpt"
one_line 2 "sampling needs a causal model" -- bash -c '"$@" </dev/null' _ "$bin" sample --ckpt "$tmp/mlm.ckpt" --interactive

cli_summary cli_consistency_test
