#!/usr/bin/env bash
# Data-parallel training under MPI (issue 12, item 3), two processes on loopback: 2 processes x batch B
# follow the loss curve of 1 process x batch 2B (1e-5 relative), a repeated run is bit-identical, process 0
# alone prints and writes the checkpoint, a 2-process checkpoint resumes with 1 process (the 4 streams
# re-divided, the same curve) and with 2 (bit-identical to an uninterrupted run), a rank count that does
# not divide the streams is refused, SIGUSR1 (what mpirun forwards) saves and stops every process at one
# step, processes started with different settings stop with one line each before writing anything, the
# classifier (train --task classify, both objectives) follows one process of twice the batch to its final
# weights, HIBERT's stages train as the language model does (1e-5 against one process of the whole batch,
# weights included; a 2-process run resumes in 1), seq2seq's 2 x B follows 1 x 2B (losses and final state
# within 1e-5), and the commands that are not data-parallel refuse several
# processes. tests/run.sh runs it when the build has MPI and mpirun exists. Last line: "cli_mpi_test: N passed, N failed".
# usage: tests/cli_mpi_test.sh path/to/longctx
set -u
bin=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
export OMP_WAIT_POLICY=${OMP_WAIT_POLICY:-passive}
# Under ASan (LC_VARIANT=asan, or a binary under build/asan) leak detection is off in the MPI processes:
# Open MPI's own allocations in plugins it has unloaded cannot be told apart or suppressed by name. Every
# other check stays on, and each run below is searched for sanitizer reports (the C and single-process
# CLI tests check this code's leaks).
case "${LC_VARIANT:-}:$bin" in
asan:* | */asan/*) export ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0 ;;
esac
mpi=(mpirun --oversubscribe --allow-run-as-root)
source "$(dirname "${BASH_SOURCE[0]}")/cli_lib.sh" # $tmp, the counters, signal_run; check and pycheck are redefined below
ok() { passed=$((passed + 1)); }
fail() { failed=$((failed + 1)); echo "FAIL: $*"; }
check() { # check DESCRIPTION -- command
    local what=$1; shift 2
    if "$@" >"$tmp/out" 2>"$tmp/err"; then ok; else fail "$what: $(tail -c 400 "$tmp/err")"; fi
}
# same_curve A B: the two "step loss" logs have the same steps and losses within 1e-5 relative
same_curve() {
    [ -s "$1" ] && [ "$(wc -l <"$1")" -eq "$(wc -l <"$2")" ] &&
        paste -d' ' "$1" "$2" | awk '$1 != $3 { exit 1 } { d = $2 - $4; if (d < 0) d = -d; if (d > 1e-5 * $2) exit 1 }'
}
cd "$tmp"
head -c 120000 "$OLDPWD/data/tinyshakespeare.txt" >small.txt
tiny=(--preset tiny --layers 1 --dim 32 --heads 2 --ffn 64 --seg-len 16 --threads 1 --eval-every 10 --eval-bytes 2000
      --data small.txt --steps 40 --warmup 4)

# ---- 2 processes x batch 2 == 1 process x batch 4, within 1e-5; repeated: bit-identical ----------
check "1 process x batch 4" -- "$bin" train "${tiny[@]}" --batch 4 --loss-log one.log --out one.ckpt
check "2 processes x batch 2" -- "${mpi[@]}" -np 2 "$bin" train "${tiny[@]}" --batch 2 --loss-log two.log --out two.ckpt
cp "$tmp/out" two.stdout
if same_curve one.log two.log; then ok; else fail "2 x 2 does not follow 1 x 4: $(paste one.log two.log | head -3)"; fi
[ "$(grep -c '^saved two.ckpt$' two.stdout)" -eq 1 ] && [ "$(grep -c '^valid bpc' two.stdout)" -eq 1 ] && ok ||
    fail "process 0 alone prints: $(cat two.stdout)"
grep -q "data parallel: 2 processes, gradient allreduce" "$tmp/err" && ok || fail "no allreduce line"
ls two.ckpt.tmp.* >/dev/null 2>&1 && fail "temporary files left" || ok
check "2 processes again" -- "${mpi[@]}" -np 2 "$bin" train "${tiny[@]}" --batch 2 --out two_again.ckpt
check "a repeated 2-process run is bit-identical" -- cmp two.ckpt two_again.ckpt
check "the checkpoint records 2 processes" -- grep -aq '"train.ranks":"2"' two.ckpt

# ---- resume a 2-process checkpoint: with 1 process (streams re-divided) and with 2 ----------------
check "2 processes, first half" -- "${mpi[@]}" -np 2 "$bin" train "${tiny[@]}" --batch 2 --stop-after 20 --out h1.ckpt
cp h1.ckpt h2.ckpt
check "resume with 1 process" -- "$bin" train --resume h1.ckpt --loss-log r1.log
grep -q "batch 4 x 16" "$tmp/err" && ok || fail "1 process should take all 4 streams: $(grep training: "$tmp/err")"
tail -n 20 two.log >two_tail.log
if same_curve two_tail.log r1.log; then ok; else fail "resumed with 1 process: another curve"; fi
check "resume with 2 processes" -- "${mpi[@]}" -np 2 "$bin" train --resume h2.ckpt
check "2 + resume(2) == uninterrupted 2, bit for bit" -- cmp h2.ckpt two.ckpt
"${mpi[@]}" -np 3 "$bin" train --resume two.ckpt --steps 50 >/dev/null 2>"$tmp/err"
[ $? -ne 0 ] && grep -q "which 3 processes cannot share: run with a number of processes dividing 4" "$tmp/err" && ok ||
    fail "3 processes for 4 streams: $(head -c 300 "$tmp/err")"

# ---- SIGUSR1 (forwarded by mpirun): every process stops at one step, process 0 saves ----------------
signal_run USR1 '^training:' sig.err 1 -- "${mpi[@]}" -np 2 "$bin" train "${tiny[@]}" --batch 2 --steps 1000000 \
    --eval-every 0 --out sig.ckpt
grep -q "interrupted by SIGUSR1 at step [0-9]* of 1000000: saved sig.ckpt" sig.err && ok ||
    fail "SIGUSR1: $(grep -v '^\[' sig.err | tail -c 400)"
check "the interrupted run resumes" -- "${mpi[@]}" -np 2 "$bin" train --resume sig.ckpt --stop-after 2

# ---- processes started with different settings: one line on every process, exit 2, nothing written ------
# (MPMD: process 0 and process 1 get different command lines). Before the check, a different --batch or
# --mem-len overflowed process 0's heap in the memory gather of the save, --steps ended in MPI_ERR_TRUNCATE
# and --data or --attn trained each process on its own data or attention.
head -c 100000 "$OLDPWD/data/tinyshakespeare.txt" >other.txt
base=("${tiny[@]}" --steps 20 --eval-every 0 --batch 2)
mismatch() { # mismatch FLAG_SHOWN -- FLAGS OF PROCESS 1...
    local flag=$1; shift 2
    rm -f mm.ckpt mm.log
    "${mpi[@]}" -np 1 "$bin" train "${base[@]}" --log mm.log --out mm.ckpt : \
        -np 1 "$bin" train "${base[@]}" "$@" --log mm.log --out mm.ckpt >mm.out 2>mm.err
    local rc=$? lines
    lines=$(grep -c "^longctx: error: train: process [01] of 2 has $flag .*, which another process does not: start every process with the same flags and data$" mm.err)
    [ $rc -ne 0 ] && [ "$lines" -eq 2 ] && [ "$(grep -c '^longctx: error' mm.err)" -eq 2 ] && ok ||
        fail "different $*: exit $rc, $lines lines: $(head -c 600 mm.err)"
    grep -Eq "Sanitizer|runtime error|MPI_ERR|corrupted" mm.err && fail "different $*: $(grep -Em2 'Sanitizer|runtime error|MPI_ERR|corrupted' mm.err)" || ok
    [ ! -e mm.ckpt ] && [ ! -e mm.log ] && ok || fail "different $*: a file was written"
}
mismatch --batch -- --batch 3
mismatch --mem-len -- --mem-len 64
mismatch --steps -- --steps 30
mismatch --data -- --data other.txt
mismatch --attn -- --attn window:w=4
grep -q "^longctx: error: train: process 1 of 2 has --attn window:w=4," mm.err && ok || fail "the value: $(cat mm.err)"
# one process failing before the check (its --data is missing) ends every process, none waits forever
timeout 120 "${mpi[@]}" -np 1 "$bin" train "${base[@]}" --out mm.ckpt : -np 1 "$bin" train "${base[@]}" \
    --data missing.txt --out mm.ckpt >mm.out 2>mm.err
rc=$?
[ $rc -ne 0 ] && [ $rc -ne 124 ] && [ "$(grep -c '^longctx: error: .*missing.txt' mm.err)" -eq 1 ] && [ ! -e mm.ckpt ] && ok ||
    fail "a missing --data on one process: exit $rc: $(head -c 400 mm.err)"
check "the same settings in MPMD form still train" -- "${mpi[@]}" -np 1 "$bin" train "${base[@]}" --out same.ckpt : \
    -np 1 "$bin" train "${base[@]}" --out same.ckpt

# ---- the classifier (train --task classify), both objectives: 2 processes x batch 2 == 1 process x batch 4 ----
# (losses and validation accuracy of each step from --log, and every tensor of the final checkpoints, within
# 1e-5), process 0 alone prints and writes, a 2-process run resumes with 1 process, settings must agree
"$bin" listops --n 96 --seed 1 --out lo_train.tsv >/dev/null 2>&1 && "$bin" listops --n 40 --seed 2 --out lo_valid.tsv \
    >/dev/null 2>&1 && ok || fail "listops data"
cls=(--task classify --data lo_train.tsv --valid lo_valid.tsv --tokens words --max-len 48 --layers 1 --dim 16
     --heads 2 --ffn 32 --steps 12 --warmup 2 --eval-every 4 --threads 1)
# curve LOG: "step loss valid_accuracy" lines of a --log file
curve() { sed -E 's/^\{"step":([0-9]+),"loss":([^,]+),.*"valid_accuracy":([^,}]+).*/\1 \2 \3/; t; s/^\{"step":([0-9]+),"loss":([^,]+),.*/\1 \2 -/' "$1"; }
same_weights() { # same_weights A B: every tensor of two safetensors files within 1e-5
    python3 - "$1" "$2" <<'PY'
import json, struct, sys
def read(p):
    b = open(p, "rb").read(); n = struct.unpack("<Q", b[:8])[0]; h = json.loads(b[8:8 + n]); d = b[8 + n:]
    return {k: struct.unpack("<%df" % ((v["data_offsets"][1] - v["data_offsets"][0]) // 4), d[v["data_offsets"][0]:v["data_offsets"][1]])
            for k, v in h.items() if k != "__metadata__" and v["dtype"] == "F32"}
a, b = read(sys.argv[1]), read(sys.argv[2])
assert a.keys() == b.keys() and a, "different tensors"
worst = max(abs(x - y) for k in a for x, y in zip(a[k], b[k]))
sys.exit(0 if worst <= 1e-5 else print("largest difference", worst) or 1)
PY
}
for obj in labels mlm; do
    extra=(); [ $obj = mlm ] && extra=(--objective mlm)
    check "classify $obj: 1 process x batch 4" -- "$bin" train "${cls[@]}" "${extra[@]}" --batch 4 --log c1_$obj.log --out c1_$obj.st
    check "classify $obj: 2 processes x batch 2" -- "${mpi[@]}" -np 2 "$bin" train "${cls[@]}" "${extra[@]}" --batch 2 \
        --log c2_$obj.log --out c2_$obj.st
    cp "$tmp/out" c2.stdout && cp "$tmp/err" c2.stderr
    curve c1_$obj.log | awk '{ print $1, $2 }' >c1.curve
    curve c2_$obj.log | awk '{ print $1, $2 }' >c2.curve
    if same_curve c1.curve c2.curve; then ok; else fail "classify $obj: 2 x 2 does not follow 1 x 4: $(paste c1.curve c2.curve | head -3)"; fi
    [ "$(curve c1_$obj.log | awk '{ print $1, $3 }')" = "$(curve c2_$obj.log | awk '{ print $1, $3 }')" ] && ok ||
        fail "classify $obj: validation accuracies differ: $(curve c1_$obj.log | head -4) / $(curve c2_$obj.log | head -4)"
    if ! command -v python3 >/dev/null; then ok; ok
    else
        check "classify $obj: the same final weights" -- same_weights c1_$obj.st.last c2_$obj.st.last
        check "classify $obj: the same best checkpoint" -- same_weights c1_$obj.st c2_$obj.st
    fi
    [ "$(grep -c '^best valid accuracy' c2.stdout)" -eq 1 ] && grep -q "data parallel: 2 processes" c2.stderr && ok ||
        fail "classify $obj: process 0 alone prints: $(cat c2.stdout)"
    [ "$(wc -l <c2_$obj.log)" -eq 12 ] && ok || fail "classify $obj: one --log line a step: $(wc -l <c2_$obj.log)"
done
check "classify: 2 processes, first half" -- "${mpi[@]}" -np 2 "$bin" train "${cls[@]}" --batch 2 --stop-after 6 \
    --log h_c.log --out h_c.st
check "classify: resume with 1 process" -- "$bin" train --task classify --data lo_train.tsv --valid lo_valid.tsv \
    --threads 1 --resume h_c.st.last --log h_c.log --out h_c.st
curve h_c.log | awk '{ print $1, $2 }' >hc.curve
curve c2_labels.log | awk '{ print $1, $2 }' >c2.curve
if same_curve c2.curve hc.curve; then ok; else fail "classify resumed with 1 process: another curve: $(paste c2.curve hc.curve | sed -n 6,8p)"; fi
signal_run USR1 '^classify:' sig_c.err 1 -- "${mpi[@]}" -np 2 "$bin" train "${cls[@]}" --batch 2 --steps 1000000 \
    --eval-every 0 --out sig_c.st
rc=$signal_rc
[ $rc -ne 0 ] && [ "$(grep -c "^longctx: interrupted by SIGUSR1 at step [0-9]*: the best checkpoint so far (step 0) is sig_c.st, the last state sig_c.st.last" sig_c.err)" -eq 1 ] &&
    [ -s sig_c.st.last ] && ok || fail "classify, SIGUSR1: exit $rc: $(grep -v '^\[' sig_c.err | tail -c 400)"
check "classify: the interrupted run resumes" -- "${mpi[@]}" -np 2 "$bin" train --task classify --data lo_train.tsv \
    --valid lo_valid.tsv --threads 1 --resume sig_c.st.last --stop-after 2 --out sig_c.st
"${mpi[@]}" -np 2 "$bin" train "${cls[@]}" --batch 60 --out few.st >/dev/null 2>few.err
rc=$?
[ $rc -eq 2 ] && [ "$(grep -c '^longctx: error: train --task classify: --data lo_train.tsv has 96 examples, too few for 2 processes x batch 60$' few.err)" -eq 2 ] &&
    [ ! -e few.st.last ] && ok || fail "classify, batch beyond the data: exit $rc: $(head -c 300 few.err)"
rm -f mm.st mm.st.last
"${mpi[@]}" -np 1 "$bin" train "${cls[@]}" --batch 2 --out mm.st : -np 1 "$bin" train "${cls[@]}" --batch 2 --pool mean \
    --out mm.st >mm.out 2>mm.err
rc=$?
[ $rc -eq 2 ] && [ "$(grep -c '^longctx: error: train --task classify: process [01] of 2 has --pool .*, which another process does not' mm.err)" -eq 2 ] &&
    [ ! -e mm.st ] && [ ! -e mm.st.last ] && ok || fail "classify, different --pool: exit $rc: $(head -c 400 mm.err)"

# ---- HIBERT (issue 43): 2 processes x batch 2 == 1 process x batch 4, both stages, within 1e-5 ----------
# (losses, validation and final weights), on the bundled BBC data with a tiny model: the first 16 articles of
# each category with their summaries (80 documents: 64 to train, 8 to validate), so each run reads and
# validates a few files rather than all 2,225
src_bbc="$OLDPWD/data/bbc-news-summary" bbc=$tmp/bbc
for dir in "$src_bbc"/articles/*/; do
    topic=$(basename "$dir")
    mkdir -p "$bbc/articles/$topic" "$bbc/summaries/$topic"
    for f in $(ls "$dir" | head -n 16); do
        cp "$dir$f" "$bbc/articles/$topic/" && cp "$src_bbc/summaries/$topic/$f" "$bbc/summaries/$topic/"
    done
done
hshape=(--sent-layers 1 --sent-dim 16 --sent-heads 2 --sent-ffn 32 --doc-layers 1 --doc-dim 16 --doc-heads 2
        --doc-ffn 32 --max-sents 16 --max-sent-len 48 --threads 1 --warmup 2 --eval-every 3)
hdec=(--dec-layers 1 --dec-dim 16 --dec-heads 2 --dec-ffn 32 --eval-docs 8)
# key_curve LOG KEY: "step value" of every --log line that holds KEY
key_curve() { sed -n 's/.*"step":\([0-9]*\),.*"'"$2"'":\([-0-9.e+]*\).*/\1 \2/p' "$1"; }
hstage() { # hstage STAGE KEY -- ARGS...: 1 x batch 4 and 2 x batch 2 of `hibert STAGE ARGS`, compared in loss and KEY
    local name=$1 key=$2; shift 3
    check "hibert $name: 1 process x batch 4" -- "$bin" hibert "$name" "$@" --batch 4 --log h1.log --out h1.st
    check "hibert $name: 2 processes x batch 2" -- "${mpi[@]}" -np 2 "$bin" hibert "$name" "$@" --batch 2 --log h2.log --out h2.st
    cp "$tmp/out" h2.stdout
    for k in loss "$key"; do
        key_curve h1.log "$k" >c1 && key_curve h2.log "$k" >c2
        if same_curve c1 c2; then ok; else fail "hibert $name: 2 x 2 does not follow 1 x 4 in $k: $(paste c1 c2 | head -3)"; fi
    done
    pycheck "hibert $name: the weights of 2 x 2 within 1e-5 of 1 x 4" -- same_weights h1.st h2.st
    [ "$(grep -c "^valid" h2.stdout)" -eq 1 ] && ok || fail "hibert $name: process 0 alone prints: $(cat h2.stdout)"
}
hstage finetune valid_rouge1 -- --data "$bbc" "${hshape[@]}" --steps 6
pycheck "hibert finetune: the last states too" -- same_weights h1.st.last h2.st.last
hstage pretrain valid_bpb -- --docs "$bbc" "${hshape[@]}" "${hdec[@]}" --steps 6

# a 2-process run resumed by 1 process: its 4 documents a batch re-divided, the curve of 1 process throughout
ft=(finetune --data "$bbc" "${hshape[@]}")
check "hibert: 1 process, first half" -- "$bin" hibert "${ft[@]}" --batch 4 --steps 3 --out r1.st
check "hibert: 1 process, resumed" -- "$bin" hibert "${ft[@]}" --resume r1.st.last --steps 6 --log r1.log
check "hibert: 2 processes, first half" -- "${mpi[@]}" -np 2 "$bin" hibert "${ft[@]}" --batch 2 --steps 3 --out r2.st
check "hibert: the 2-process run resumed by 1" -- "$bin" hibert "${ft[@]}" --resume r2.st.last --steps 6 --log r2.log
key_curve r1.log loss >c1 && key_curve r2.log loss >c2
if same_curve c1 c2; then ok; else fail "hibert resumed with 1 process: another curve: $(paste c1 c2 | head -3)"; fi
"${mpi[@]}" -np 3 "$bin" hibert "${ft[@]}" --resume r2.st.last --steps 8 >/dev/null 2>"$tmp/err"
[ $? -eq 2 ] && grep -q "trained batches of 4 documents, which 3 processes cannot share" "$tmp/err" && ok ||
    fail "hibert: 3 processes for batches of 4: $(head -c 300 "$tmp/err")"

# processes started with other settings stop before writing; intruders (swaps across one batch) refuse
rm -f mm.st mm.log
"${mpi[@]}" -np 1 "$bin" hibert "${ft[@]}" --steps 2 --log mm.log --out mm.st : \
    -np 1 "$bin" hibert "${ft[@]}" --steps 2 --sent-dim 8 --log mm.log --out mm.st >mm.out 2>mm.err
rc=$?
[ $rc -eq 2 ] && [ "$(grep -c '^longctx: error: hibert finetune: process [01] of 2 has --sent-dim .*, which another process does not' mm.err)" -eq 2 ] &&
    [ ! -e mm.st ] && [ ! -e mm.log ] && ok || fail "hibert with different --sent-dim: exit $rc: $(head -c 600 mm.err)"

# ---- commands that are not data-parallel refuse to run as several processes -----------------------------
mkdir -p docs && printf 'One sentence here. Another one there.\n' >docs/a.txt
"${mpi[@]}" -np 2 "$bin" hibert pretrain --docs docs --intruders 0.2 --out h.st --steps 2 >/dev/null 2>np.err
rc=$?
[ $rc -eq 2 ] && [ "$(grep -c "^longctx: error: hibert pretrain: --intruders swaps sentences between the documents of one batch" np.err)" -eq 2 ] &&
    [ ! -e h.st ] && ok || fail "hibert pretrain --intruders under mpirun -np 2: exit $rc: $(head -c 400 np.err)"

# ---- seq2seq (train --task seq2seq): 2 processes x batch 4 == 1 process x batch 8 -------------------------
# the losses of every step (--log) within 1e-5 relative, and every weight of the final state (OUT.last)
# within 1e-5 (they are of unit scale; AdamW turns the rounding of the tiniest gradients into steps of up to
# the learning rate, so the moments are not compared); a setting that differs between the processes stops
# both with one line naming its flag
awk 'BEGIN { srand(7); print "Source\tTarget"
    for (i = 0; i < 300; i++) { len = 2 + int(rand() * 5); s = ""; r = ""
        for (j = 0; j < len; j++) { c = substr("abcd", 1 + int(rand() * 4), 1); s = s c; r = c r }
        print s "\t" r } }' >s_train.tsv
head -n 21 s_train.tsv >s_valid.tsv
s2s=(train --task seq2seq --data s_train.tsv --valid s_valid.tsv --layers 1 --dim 16 --heads 2 --ffn 32 --steps 12
     --eval-every 6 --warmup 2 --lr 0.003 --threads 1)
check "seq2seq: 1 process x batch 8" -- "$bin" "${s2s[@]}" --batch 8 --log s1.log --out s1.ckpt
check "seq2seq: 2 processes x batch 4" -- "${mpi[@]}" -np 2 "$bin" "${s2s[@]}" --batch 4 --log s2.log --out s2.ckpt
losses() { sed -n 's/^{"step":\([0-9]*\),"loss":\([^,]*\),.*/\1 \2/p' "$1"; }
losses s1.log >s1.loss; losses s2.log >s2.loss
if [ "$(wc -l <s1.loss)" -eq 12 ] && same_curve s1.loss s2.loss; then ok; else
    fail "seq2seq 2 x 4 does not follow 1 x 8: $(paste s1.loss s2.loss | head -3)"; fi
# the tensors of OUT.last as floats: the parameters, then their two moments (full attention: no kind state);
# the headers have the same length (train.batch and train.ranks differ by one digit each)
floats() { local n; n=$(od -An -tu8 -N8 "$1" | tr -d ' '); tail -c +$((n + 9)) "$1" | od -An -v -tf4 -w4; }
floats s1.ckpt.last >s1.f; floats s2.ckpt.last >s2.f
params=$(($(wc -l <s1.f) / 3))
worst=$(paste s1.f s2.f | head -n "$params" | awk 'NF != 2 { bad = 1 } { d = $1 - $2; if (d < 0) d = -d
    if (d > w) w = d } END { if (bad || NR < 1000) print "bad"; else printf "%.2g\n", w }')
[ $((params * 3)) -eq "$(wc -l <s2.f)" ] && [ "$worst" != bad ] && awk -v w="$worst" 'BEGIN { exit !(w <= 1e-5) }' &&
    ok || fail "seq2seq final weights differ beyond 1e-5 ($worst)"
echo "note: seq2seq 2 processes x batch 4 vs 1 x 8: largest difference of a final weight ${worst}"
"${mpi[@]}" -np 1 "$bin" "${s2s[@]}" --batch 4 --out sm.ckpt : -np 1 "$bin" "${s2s[@]}" --batch 4 --dim 32 \
    --out sm.ckpt >mm.out 2>mm.err
rc=$?
[ $rc -eq 2 ] && [ "$(grep -c '^longctx: error: train: process [01] of 2 has --dim .*, which another process does not' mm.err)" -eq 2 ] &&
    [ ! -e sm.ckpt ] && ok || fail "seq2seq with different --dim: exit $rc: $(head -c 400 mm.err)"
# one process failing before the meetings (its --valid is missing, or not given) ends every process
no_valid=("${s2s[@]:0:5}" "${s2s[@]:7}") # s2s without "--valid s_valid.tsv"
for bad in "--valid missing.tsv" ""; do
    timeout 120 "${mpi[@]}" -np 1 "$bin" "${s2s[@]}" --batch 4 --out sm.ckpt : -np 1 "$bin" "${no_valid[@]}" \
        --batch 4 $bad --out sm.ckpt >mm.out 2>mm.err
    rc=$?
    [ $rc -ne 0 ] && [ $rc -ne 124 ] && [ "$(grep -c '^longctx: error: ' mm.err)" -eq 1 ] && [ ! -e sm.ckpt ] && ok ||
        fail "seq2seq with ${bad:-no --valid} on one process: exit $rc: $(head -c 400 mm.err)"
done

echo "cli_mpi_test: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
