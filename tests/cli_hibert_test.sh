#!/usr/bin/env bash
# CLI tests of the HIBERT commands on tiny shapes and corpora made here: `hibert pretrain` ->
# `hibert finetune --init` -> `summarize` -> `eval --task summarize --ckpt`; a resumed fine-tuning run
# equals the uninterrupted one (byte-identical checkpoints); a SIGINT save that resumes; help texts; and
# every bad input (exit 1 or 2, one line naming the file or flag): empty documents, no sentence
# boundary, non-UTF-8 files (and --encoding latin1), an empty directory, checkpoints of the other kind,
# a missing --out directory, shape flags that disagree with --init, flags that --resume cannot change, outputs
# that are inputs, paths the checkpoint cannot record.
# usage: tests/cli_hibert_test.sh path/to/longctx
set -u
bin=$1
cli_one_line_errors=1
source "$(dirname "${BASH_SOURCE[0]}")/cli_lib.sh"

# a directory of 20 .txt documents (document 19 is the held-out one) and a BBC-layout root of 10
# articles (001: test, 006: valid, the rest train) whose summaries are their sentences 0 and 3
news_corpus 3 5 4
news_article 40 4 >"$tmp/a.txt"
shape=(--sent-layers 1 --sent-dim 16 --sent-heads 2 --sent-ffn 32 --doc-layers 1 --doc-dim 16 --doc-heads 2
       --doc-ffn 32 --dec-layers 1 --dec-dim 16 --dec-heads 2 --dec-ffn 32 --max-sent-len 64 --max-sents 6)
run=(--batch 2 --threads 1 --warmup 2)
# keep NAME: the last command's stdout and stderr as NAME.out and NAME.err (check and expect reuse out, err)
keep() { cp "$tmp/out" "$tmp/$1.out"; cp "$tmp/err" "$tmp/$1.err"; }
ft=("$bin" hibert finetune --data "$tmp/bbc" "${run[@]}")

# usage and help
expect 2 "hibert: expected pretrain or finetune" -- "$bin" hibert
expect 2 "hibert pretrain: --out is required" -- "$bin" hibert pretrain --docs "$tmp/docs"
expect 2 "hibert pretrain: --docs is required" -- "$bin" hibert pretrain --out "$tmp/x.st"
expect 2 "--data belongs to hibert finetune" -- "$bin" hibert pretrain --data "$tmp/bbc" --out "$tmp/x.st"
expect 2 "--labels must be contained or greedy" -- "${ft[@]}" --labels rouge --out "$tmp/x.st"
expect 2 "--encoding must be utf8 or latin1" -- "$bin" summarize --ckpt x --encoding cp1252 "$tmp/a.txt"
expect 2 "summarize: no FILE given" -- "$bin" summarize --ckpt x
check "hibert --help" -- "$bin" hibert --help
keep help
check "hibert --help names both stages and the shape flags" -- grep -q -- "--sent-attn" "$tmp/help.out"
check "hibert --help names finetune" -- grep -q -- "hibert finetune --data" "$tmp/help.out"
check "hibert finetune --help" -- "$bin" hibert finetune --help
keep help
check "finetune --help lists --labels" -- grep -q -- "--labels" "$tmp/help.out"
check "finetune --help lists --lr with its default" -- grep -q -- "--lr .*(default 0.001)" "$tmp/help.out"
check "summarize --help" -- "$bin" summarize --help
keep help
check "summarize --help lists --sentences" -- grep -q -- "--sentences" "$tmp/help.out"

# the three stages
check "pretrain" -- "$bin" hibert pretrain --docs "$tmp/docs" "${shape[@]}" "${run[@]}" --steps 4 --eval-every 2 \
    --out "$tmp/pre.st" --json
keep pre
check "pretrain: JSON last line" -- grep -Eq '^\{"valid_bpb":[0-9.]+,' <(tail -1 "$tmp/pre.out")
check "pretrain plans decoder rows" -- grep -Eq "planned for [0-9]+ sentences, [0-9]+ bytes, [1-9][0-9]* decoder rows" "$tmp/pre.err"
check "pretrain with windowed encoders" -- "$bin" hibert pretrain --docs "$tmp/docs" "${shape[@]}" "${run[@]}" --steps 1 \
    --sent-attn window:w=4,global=1 --doc-attn window:w=2 --out "$tmp/win.st"
check "finetune --init" -- "${ft[@]}" --init "$tmp/pre.st" --steps 6 --eval-every 3 --out "$tmp/ft.st" --json
keep ft
check "finetune: JSON last line" -- grep -Eq '^\{"rouge1":[0-9.]+,"rouge2":[0-9.]+,"rougeL":[0-9.]+,"best"' <(tail -1 "$tmp/ft.out")
check "finetune plans no decoder" -- grep -q ", 0 decoder rows" "$tmp/ft.err"
# the family table's names for the same commands (train --task hibert: hibert finetune; --objective pretrain:
# hibert pretrain) train the same models
check "train --task hibert" -- "$bin" train --task hibert --data "$tmp/bbc" "${run[@]}" --init "$tmp/pre.st" --steps 6 \
    --eval-every 3 --out "$tmp/ft2.st"
check "train --task hibert: the model of hibert finetune" -- cmp -s "$tmp/ft.st" "$tmp/ft2.st"
check "train --task hibert --objective=pretrain" -- "$bin" train --objective=pretrain --task hibert --docs "$tmp/docs" \
    "${shape[@]}" "${run[@]}" --steps 4 --eval-every 2 --out "$tmp/pre2.st"
check "train --task hibert --objective pretrain: the model of hibert pretrain" -- cmp -s "$tmp/pre.st" "$tmp/pre2.st"
expect 2 "train --task hibert: --objective must be pretrain or finetune, got 'mlm'" -- \
    "$bin" train --task hibert --objective mlm --out "$tmp/x.st"
expect 2 "hibert finetune: --precision must be fp32 or bf16, got 'half'" -- "${ft[@]}" --precision half --out "$tmp/x.st"
check "finetune --precision bf16" -- "${ft[@]}" --init "$tmp/pre.st" --precision bf16 --steps 2 --eval-every 2 \
    --out "$tmp/bf.st"
check "bf16 recorded" -- grep -aq '"precision":"bf16"' "$tmp/bf.st.last"
check "pretrain --precision bf16" -- "$bin" hibert pretrain --docs "$tmp/docs" "${shape[@]}" "${run[@]}" --steps 1 \
    --precision bf16 --out "$tmp/prebf.st"
check "pretrain --intruders" -- "$bin" hibert pretrain --docs "$tmp/docs" "${shape[@]}" "${run[@]}" --steps 2 \
    --eval-every 2 --intruders 0.5 --intruder-weight 2 --out "$tmp/intr.st" --log "$tmp/intr.jsonl" --json
keep intr
check "intruders: the summary's validation BCE" -- grep -Eq '"valid_intruder_bce":[0-9.]+,' <(tail -1 "$tmp/intr.out")
check "intruders: each step logs its BCE" -- grep -Eq '^\{"step":2,.*"intruder_bce":[0-9.]+,"valid_bpb":[0-9.]+,"valid_intruder_bce":[0-9.]+' "$tmp/intr.jsonl"
check "intruders recorded" -- grep -aq '"pretrain.intruders":"0.5"' "$tmp/intr.st"
check "finetune --init from a pre-training with intruders" -- "${ft[@]}" --init "$tmp/intr.st" --steps 1 --eval-every 1 \
    --out "$tmp/fti.st"
# its export (`longctx export`: no AdamW moments) starts the next stage as the checkpoint does
check "export a pre-training checkpoint" -- "$bin" export --ckpt "$tmp/intr.st" --out "$tmp/intr.export"
check "finetune --init from the export" -- "${ft[@]}" --init "$tmp/intr.export" --steps 1 --eval-every 1 --out "$tmp/fte.st"
check "the same fine-tuned model as from the checkpoint" -- cmp -s "$tmp/fti.st" "$tmp/fte.st"
check "summarize with a pre-training checkpoint with intruders" -- "$bin" summarize --ckpt "$tmp/intr.st" --sentences 2 \
    --threads 1 "$tmp/a.txt"
keep sumi
check "it says the head is the intruder head" -- grep -q "scored by its intruder head (how well each belongs" "$tmp/sumi.err"
expect 2 "pre.st: a pre-training checkpoint without --intruders: its head was never trained" -- \
    "$bin" summarize --ckpt "$tmp/pre.st" "$tmp/a.txt"
expect 2 "--intruders belongs to hibert pretrain" -- "${ft[@]}" --intruders 0.5 --out "$tmp/x.st"
expect 2 "--intruders" -- "$bin" hibert pretrain --docs "$tmp/docs" --intruders 1.5 --out "$tmp/x.st"
# hashed word vectors: a pre-training with them, fine-tuning from it (the same --sent-words is no disagreement),
# summarize; a checkpoint without them given another --sent-words is refused
check "pretrain --sent-words" -- "$bin" hibert pretrain --docs "$tmp/docs" "${shape[@]}" "${run[@]}" --steps 2 \
    --eval-every 2 --sent-words 64 --intruders 0.5 --out "$tmp/words.st"
check "sent.words recorded" -- grep -aq '"sent.words":"64"' "$tmp/words.st"
check "finetune --init from word vectors, --sent-words repeated" -- "${ft[@]}" --init "$tmp/words.st" --sent-words 64 \
    --steps 1 --eval-every 1 --out "$tmp/ftw.st"
check "summarize with word vectors" -- "$bin" summarize --ckpt "$tmp/ftw.st" --sentences 2 --threads 1 "$tmp/a.txt"
expect 2 "--sent-words disagrees with .*pre.st" -- "${ft[@]}" --init "$tmp/pre.st" --sent-words 64 --out "$tmp/x.st"
expect 2 "--sent-words" -- "${ft[@]}" --sent-words -1 --out "$tmp/x.st"
# head features (position, length, LexRank centrality; longctx's extension): added to a pre-trained checkpoint
# without them by --init, recorded, read by summarize and eval; a checkpoint with them fixes them; only 0 or 3
check "finetune --init --head-features 3" -- "${ft[@]}" --init "$tmp/pre.st" --head-features 3 --steps 2 --eval-every 2 \
    --out "$tmp/hf.st"
check "head.features recorded" -- grep -aq '"head.features":"3"' "$tmp/hf.st"
check "summarize with head features" -- "$bin" summarize --ckpt "$tmp/hf.st" --sentences 2 --threads 1 "$tmp/a.txt"
check "eval with head features" -- "$bin" eval --task summarize --data "$tmp/bbc" --split all --ckpt "$tmp/hf.st" --threads 1
expect 2 "--head-features disagrees with .*hf.st" -- "${ft[@]}" --init "$tmp/hf.st" --head-features 0 --out "$tmp/x.st"
expect 2 "--head-features must be 0, 3 or 4, got 2" -- "${ft[@]}" --head-features 2 --out "$tmp/x.st"
expect 2 "--head-features belongs to hibert finetune" -- "$bin" hibert pretrain --docs "$tmp/docs" --head-features 3 --out "$tmp/x.st"
expect 2 "hibert finetune: --lr-scale: 'sent.=2@0' is not PREFIX=F" -- "${ft[@]}" --lr-scale sent.=2@0 --out "$tmp/x.st"
check "finetune --lr-scale (sentence encoder frozen 1 step, then at a tenth)" -- "${ft[@]}" --init "$tmp/pre.st" \
    --lr-scale "sent.=0@1,sent.blocks.=0.1" --steps 2 --eval-every 2 --out "$tmp/ls.st"
check "--lr-scale recorded for --resume" -- grep -aq '"train.lr_scale":"sent.=0@1,sent.blocks.=0.1"' "$tmp/ls.st.last"
check "summarize with a bf16 checkpoint" -- "$bin" summarize --ckpt "$tmp/bf.st" --sentences 2 --threads 1 "$tmp/a.txt"
check "summarize" -- "$bin" summarize --ckpt "$tmp/ft.st" --sentences 2 --threads 1 "$tmp/a.txt"
keep sum
check "summarize prints two of the sentences" -- test "$(grep -o 'The [a-z]* of item 40' "$tmp/sum.out" | wc -l)" -eq 2
check "summarize --scores" -- "$bin" summarize --ckpt "$tmp/ft.st" --sentences 2 --threads 1 --scores "$tmp/a.txt"
keep scores
check "--scores: one SCORE<tab>0|1<tab>SENTENCE line a sentence, 2 picked" -- \
    test "$(grep -Ec $'^-?[0-9][0-9.e+-]*\t[01]\t.' "$tmp/scores.out")" -eq "$(wc -l < "$tmp/scores.out")" -a \
    "$(grep -c $'\t1\t' "$tmp/scores.out")" -eq 2
check "--scores: the picked sentences are the summary, the best two scores" -- test \
    "$(grep $'\t1\t' "$tmp/scores.out" | cut -f3 | paste -sd' ')" = "$(cat "$tmp/sum.out")" -a \
    "$(sort -g -r "$tmp/scores.out" | head -2 | cut -f2 | paste -sd' ')" = "1 1"
check "eval --task summarize --ckpt" -- "$bin" eval --task summarize --data "$tmp/bbc" --split test --ckpt "$tmp/ft.st" --json
keep ev
check "eval: JSON last line, one test document" -- \
    grep -Eq '^\{"rouge1":[0-9.]+,"rouge2":[0-9.]+,"rougeL":[0-9.]+,"docs":1\}$' <(tail -1 "$tmp/ev.out")
check "eval --task summarize --ckpt --threads 1" -- \
    "$bin" eval --task summarize --data "$tmp/bbc" --split test --ckpt "$tmp/ft.st" --threads 1 --json
keep ev1
check "eval: the same scores on 1 thread as on all cores" -- cmp <(tail -1 "$tmp/ev1.out") <(tail -1 "$tmp/ev.out")
check "eval --task hibert" -- "$bin" eval --task hibert --data "$tmp/bbc" --split test --ckpt "$tmp/ft.st" --threads 1 --json
keep evh
check "eval --task hibert: the scores of eval --task summarize --ckpt" -- cmp <(tail -1 "$tmp/evh.out") <(tail -1 "$tmp/ev.out")
expect 2 "eval --task hibert: scores a HIBERT checkpoint \\(--ckpt\\); --method is eval --task summarize's" -- \
    "$bin" eval --task hibert --method lead3
# metadata that claims a larger model than the file's tensors (a sentence encoder's ffn of 2^20) is refused by the
# tensor table before any model is built: --init and --resume once built the model it claimed (0.58 GB). Release
# builds run in 1 GB of address space (AddressSanitizer needs more).
ckpt_set_meta "$tmp/intr.st" "$tmp/huge_pre.st" sent.d_ff=1048576
ckpt_set_meta "$tmp/ft.st.last" "$tmp/huge_ft.st" sent.d_ff=1048576
in_1gb() { if [ "${LC_VARIANT:-release}" = asan ]; then "$@"; else bash -c 'ulimit -v 1000000 && "$@"' _ "$@"; fi; }
claims="tensor sent\.blocks\.0\.ffn\.fc1\.weight has shape \[32, 16\] but the model expects \[1048576, 16\]"
expect 1 "huge_pre\.st: $claims" -- in_1gb "${ft[@]}" --init "$tmp/huge_pre.st" --steps 1 --out "$tmp/x.st"
expect 1 "huge_ft\.st: $claims" -- in_1gb "${ft[@]}" --resume "$tmp/huge_ft.st" --out "$tmp/x.st"
expect 1 "huge_ft\.st: $claims" -- in_1gb "$bin" summarize --ckpt "$tmp/huge_ft.st" "$tmp/a.txt"
expect 1 "huge_ft\.st: $claims" -- in_1gb "$bin" eval --task summarize --data "$tmp/bbc" --split test --ckpt "$tmp/huge_ft.st"
check "no checkpoint from the refused runs" -- test ! -e "$tmp/x.st"
expect 2 "--threads must be" -- "$bin" eval --task summarize --ckpt "$tmp/ft.st" --threads -1

# resume: 3 steps then 3 more equal 6 at once (the last state and the best checkpoint, byte for byte)
check "finetune 3 steps" -- "${ft[@]}" --init "$tmp/pre.st" --steps 3 --eval-every 3 --out "$tmp/half.st"
check "resume to 6" -- "${ft[@]}" --resume "$tmp/half.st.last" --steps 6 --out "$tmp/half.st"
check "resumed last state == uninterrupted" -- cmp "$tmp/half.st.last" "$tmp/ft.st.last"
check "resumed best checkpoint == uninterrupted" -- cmp "$tmp/half.st" "$tmp/ft.st"

# SIGINT: the last state is saved, exit 130, and it resumes
"${ft[@]}" --init "$tmp/pre.st" --steps 1000000 --eval-every 0 --out "$tmp/sig.st" 2>"$tmp/sig.err" &
pid=$!
for ((i = 0; i < 200; i++)); do grep -q "planned for" "$tmp/sig.err" && break; sleep 0.05; done
sleep 0.3
kill -INT "$pid"
wait "$pid"
rc=$?
check "SIGINT exits 130" -- test "$rc" -eq 130
check "SIGINT saves the last state" -- grep -q "interrupted by SIGINT at step [0-9]* of 1000000: saved .*sig.st.last" "$tmp/sig.err"
at=$(grep -o "at step [0-9]*" "$tmp/sig.err" | grep -o "[0-9]*$")
check "the SIGINT save resumes" -- "${ft[@]}" --resume "$tmp/sig.st.last" --steps $(( ${at:-0} + 1 )) --eval-every 0

# bad documents and directories
mkdir "$tmp/empty" "$tmp/edoc" "$tmp/ldoc"
expect 1 "empty: no .txt documents" -- "$bin" hibert pretrain --docs "$tmp/empty" --out "$tmp/x.st"
cp "$tmp/a.txt" "$tmp/edoc/a.txt"; : >"$tmp/edoc/b.txt"
expect 1 "edoc/b.txt: empty document" -- "$bin" hibert pretrain --docs "$tmp/edoc" --out "$tmp/x.st"
: >"$tmp/e.txt"
expect 1 "e.txt: empty document" -- "$bin" summarize --ckpt "$tmp/ft.st" "$tmp/e.txt"
printf 'no boundary in this whole text' >"$tmp/one.txt"
expect 1 "one.txt: one sentence, no sentence boundary" -- "$bin" summarize --ckpt "$tmp/ft.st" "$tmp/one.txt"
printf 'Caf\xe9 prices rose in March. Nobody knew why it happened. Shops were full.' >"$tmp/latin.txt"
expect 1 "latin.txt: not UTF-8 .*--encoding latin1" -- "$bin" summarize --ckpt "$tmp/ft.st" "$tmp/latin.txt"
check "summarize --encoding latin1" -- "$bin" summarize --ckpt "$tmp/ft.st" --encoding latin1 --threads 1 "$tmp/latin.txt"
keep lat
check "the Latin-1 text comes out as UTF-8" -- grep -q "Café prices rose" "$tmp/lat.out"
cp "$tmp/a.txt" "$tmp/latin.txt" "$tmp/ldoc/"
expect 1 "latin.txt: not UTF-8" -- "$bin" hibert pretrain --docs "$tmp/ldoc" --out "$tmp/x.st"
check "pretrain --encoding latin1" -- "$bin" hibert pretrain --docs "$tmp/ldoc" --encoding latin1 "${shape[@]}" \
    "${run[@]}" --steps 1 --out "$tmp/l.st"

# checkpoints of the other kind
printf 'Some text for a tiny language model to read, twice over. %.0s' 1 2 3 4 5 6 >"$tmp/lm.txt"
check "tiny language model" -- "$bin" train --preset tiny --layers 1 --dim 16 --heads 2 --ffn 32 --seg-len 16 \
    --batch 2 --threads 1 --steps 1 --eval-every 0 --data "$tmp/lm.txt" --out "$tmp/lm.ckpt"
lm="lm.ckpt: a language model checkpoint \(model = [a-z]+\), not a HIBERT model: use it with longctx eval, sample"
expect 1 "$lm" -- "$bin" summarize --ckpt "$tmp/lm.ckpt" "$tmp/a.txt"
expect 1 "$lm" -- "${ft[@]}" --init "$tmp/lm.ckpt" --out "$tmp/x.st"
expect 1 "$lm" -- "$bin" hibert pretrain --resume "$tmp/lm.ckpt" --docs "$tmp/docs"
expect 1 "$lm" -- "$bin" eval --task summarize --data "$tmp/bbc" --split test --ckpt "$tmp/lm.ckpt"
expect 1 "ft.st: a HIBERT checkpoint \(model = hibert\), not a language model: use it with longctx summarize" -- "$bin" sample --ckpt "$tmp/ft.st" --tokens 4
expect 1 "ft.st: a HIBERT checkpoint \(model = hibert\), not a language model: use it with longctx summarize" -- "$bin" eval --ckpt "$tmp/ft.st" --data "$tmp/lm.txt"
expect 2 "--resume .*pre.st is a pretrain checkpoint" -- "${ft[@]}" --resume "$tmp/pre.st"
# --resume: a flag the checkpoint fixes, given another value, is refused, not silently ignored (the
# recorded value is accepted: the resumes above repeat --data and --batch); the checkpoint is left as it was
cp "$tmp/pre.st" "$tmp/pre_keep.st"
printf 'id\ttext\n1\t%s\n' "$(news_article 50 4)" >"$tmp/other.tsv"
for flag in "--docs $tmp/other.tsv" "--lr 5" "--batch 7" "--seed 9" "--warmup 1" "--dropout 0.5" "--intruders 0.5"; do
    expect 2 "hibert pretrain: ${flag%% *} .* disagrees with --resume .*pre.st, which records .*the checkpoint fixes it" -- \
        "$bin" hibert pretrain --resume "$tmp/pre.st" $flag --steps 99 --threads 1
done
expect 2 "hibert finetune: --labels greedy disagrees with --resume .*, which records contained" -- \
    "${ft[@]}" --resume "$tmp/half.st.last" --labels greedy --steps 9
check "the refused resumes left pre.st alone" -- cmp "$tmp/pre.st" "$tmp/pre_keep.st"

# an output is never an input: not a document, not inside a document folder or BBC root, not --init
printf 'id\ttext\n1\t%s\n2\t%s\n' "$(news_article 60 4)" "$(news_article 61 4)" >"$tmp/x.tsv"
cp -r "$tmp/docs" "$tmp/docs_keep"; cp -r "$tmp/bbc" "$tmp/bbc_keep"; cp "$tmp/x.tsv" "$tmp/x_keep.tsv"
expect 2 "--out .*docs/doc03.txt lies inside the --docs directory .*docs: refusing to write into an input" -- \
    "$bin" hibert pretrain --docs "$tmp/docs" "${shape[@]}" "${run[@]}" --steps 1 --out "$tmp/docs/doc03.txt"
expect 2 "--out .*docs/new.st lies inside the --docs directory" -- \
    "$bin" hibert pretrain --docs "$tmp/a.txt" "$tmp/docs" "${shape[@]}" "${run[@]}" --steps 1 --out "$tmp/docs/new.st"
expect 2 "--out .*x.tsv is the --docs file .*x.tsv: refusing to replace it" -- \
    "$bin" hibert pretrain --docs "$tmp/x.tsv" "${shape[@]}" "${run[@]}" --steps 1 --out "$tmp/x.tsv"
expect 2 "--log .*x.tsv is the --docs file" -- \
    "$bin" hibert pretrain --docs "$tmp/x.tsv" "${shape[@]}" "${run[@]}" --steps 1 --out "$tmp/x.st" --log "$tmp/x.tsv"
expect 2 "--out .*summaries/t/002.txt lies inside the --data directory .*bbc" -- \
    "${ft[@]}" --init "$tmp/pre.st" --steps 1 --out "$tmp/bbc/summaries/t/002.txt"
expect 2 "--out .*pre.st is the --init file" -- "${ft[@]}" --init "$tmp/pre.st" --steps 1 --out "$tmp/pre.st"
check "the documents are untouched" -- diff -r "$tmp/docs" "$tmp/docs_keep"
check "the BBC root is untouched" -- diff -r "$tmp/bbc" "$tmp/bbc_keep"
check "the TSV is untouched" -- cmp "$tmp/x.tsv" "$tmp/x_keep.tsv"
rm -rf "$tmp/docs_keep" "$tmp/bbc_keep"
# paths the checkpoint records (data.sources) are checked before the first step, not at the save
bad=$'bad\xffdir' nl=$'new\nline'
mkdir "$tmp/$bad" "$tmp/$nl"; cp "$tmp/docs"/doc0*.txt "$tmp/$bad/"; cp "$tmp/docs"/doc0*.txt "$tmp/$nl/"
expect 2 "dir: the checkpoint records this path, which must be UTF-8 without a newline: rename it" -- \
    "$bin" hibert pretrain --docs "$tmp/$bad" "${shape[@]}" "${run[@]}" --steps 30 --out "$tmp/bad.st"
expect 2 "hibert pretrain: --docs .*new\?line: the checkpoint records this path" -- \
    "$bin" hibert pretrain --docs "$tmp/$nl" "${shape[@]}" "${run[@]}" --steps 30 --out "$tmp/bad.st"
check "no checkpoint from either" -- test ! -e "$tmp/bad.st"

# where the checkpoint goes, and the shape fixed by --init
expect 1 "nodir/x.st: directory .*nodir: No such file" -- "$bin" hibert pretrain --docs "$tmp/docs" --out "$tmp/nodir/x.st"
expect 1 "nodir/x.st: directory .*nodir: No such file" -- "${ft[@]}" --init "$tmp/pre.st" --out "$tmp/nodir/x.st"
expect 2 "--sent-dim disagrees with .*pre.st" -- "${ft[@]}" --init "$tmp/pre.st" --sent-dim 32 --out "$tmp/x.st"
expect 2 "--doc-attn disagrees with .*pre.st" -- "${ft[@]}" --init "$tmp/pre.st" --doc-attn window:w=2 --out "$tmp/x.st"
expect 2 "--max-sents disagrees with .*pre.st" -- "${ft[@]}" --init "$tmp/pre.st" --max-sents 7 --out "$tmp/x.st"
check "agreeing shape flags with --init" -- "${ft[@]}" --init "$tmp/pre.st" --sent-dim 16 --steps 1 --out "$tmp/y.st"

# the shipped model (models/hibert-bbc.safetensors, docs/results/summarization.md) summarizes right after the build: a
# summary of 3 sentences of the article's body, which starts with one of them
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
article="$root/data/bbc-news-summary/articles/tech/001.txt"
check "summarize with the shipped model" -- "$bin" summarize --ckpt "$root/models/hibert-bbc.safetensors" --title \
    --sentences 3 --threads 1 "$article"
first=$(head -c 40 "$tmp/out")
cp "$tmp/out" "$tmp/shipped.summary"
check "the summary starts with a sentence of the article" -- grep -qF -- "$first" "$article"
check "the summary is not the title" -- test "$(head -n 1 "$article" | head -c 40)" != "$first"
check "export the shipped model" -- "$bin" export --ckpt "$root/models/hibert-bbc.safetensors" --out "$tmp/shipped.st"
check "its export summarizes the same" -- "$bin" summarize --ckpt "$tmp/shipped.st" --title --sentences 3 --threads 1 "$article"
cp "$tmp/out" "$tmp/export.summary"   # (check writes each command's stdout to $tmp/out)
check "the shipped model wrote a summary" -- test -s "$tmp/shipped.summary" -a "$(wc -l <"$tmp/shipped.summary")" -ge 1
check "the same summary" -- cmp -s "$tmp/export.summary" "$tmp/shipped.summary"

cli_summary cli_hibert_test
