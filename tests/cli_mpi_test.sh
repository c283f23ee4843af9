#!/usr/bin/env bash
# Data-parallel training under MPI (issue 12, item 3), two processes on loopback: 2 processes x batch B
# follow the loss curve of 1 process x batch 2B (1e-5 relative), a repeated run is bit-identical, process 0
# alone prints and writes the checkpoint, a 2-process checkpoint resumes with 1 process (the 4 streams
# re-divided, the same curve) and with 2 (bit-identical to an uninterrupted run), a rank count that does
# not divide the streams is refused, SIGUSR1 (what mpirun forwards) saves and stops every process at one
# step, processes started with different settings stop with one line each before writing anything, and
# the commands that are not data-parallel refuse several processes; seq2seq's 2 x B follows 1 x 2B (losses
# and final state within 1e-5). tests/run.sh runs it when the build has MPI and mpirun exists. Last line: "cli_mpi_test: N passed, N failed".
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
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
passed=0 failed=0
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
"${mpi[@]}" -np 2 "$bin" train "${tiny[@]}" --batch 2 --steps 1000000 --eval-every 0 --out sig.ckpt >/dev/null \
    2>sig.err &
pid=$!
for _ in $(seq 100); do grep -q '^training:' sig.err 2>/dev/null && break; sleep 0.1; done
sleep 1
kill -USR1 $pid
wait $pid
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

# ---- commands that are not data-parallel refuse to run as several processes -----------------------------
printf 'label\ttext\n1\tgood\n0\tbad\n' >t.tsv
"${mpi[@]}" -np 2 "$bin" train --task classify --data t.tsv --valid t.tsv --out c.st --steps 2 >/dev/null 2>np.err
rc=$?
[ $rc -eq 2 ] && [ "$(grep -c '^longctx: error: train --task classify runs in one process (it is not data-parallel yet)' np.err)" -eq 2 ] &&
    [ ! -e c.st ] && ok || fail "classify under mpirun -np 2: exit $rc: $(head -c 400 np.err)"
mkdir -p docs && printf 'One sentence here. Another one there.\n' >docs/a.txt
for stage in "pretrain --docs docs" "finetune --data docs"; do
    "${mpi[@]}" -np 2 "$bin" hibert $stage --out h.st --steps 2 >/dev/null 2>np.err
    rc=$?
    [ $rc -eq 2 ] && [ "$(grep -c "^longctx: error: hibert ${stage%% *} runs in one process" np.err)" -eq 2 ] &&
        [ ! -e h.st ] && ok || fail "hibert $stage under mpirun -np 2: exit $rc: $(head -c 400 np.err)"
done

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
