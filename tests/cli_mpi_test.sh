#!/usr/bin/env bash
# Data-parallel training under MPI (issue 12, item 3), two processes on loopback: 2 processes x batch B
# follow the loss curve of 1 process x batch 2B (1e-5 relative), a repeated run is bit-identical, process 0
# alone prints and writes the checkpoint, a 2-process checkpoint resumes with 1 process (the 4 streams
# re-divided, the same curve) and with 2 (bit-identical to an uninterrupted run), a rank count that does
# not divide the streams is refused, SIGUSR1 (what mpirun forwards) saves and stops every process at one
# step. tests/run.sh runs it when the build has MPI and mpirun exists. Last line: "cli_mpi_test: N passed, N failed".
# usage: tests/cli_mpi_test.sh path/to/longctx
set -u
bin=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
export OMP_WAIT_POLICY=${OMP_WAIT_POLICY:-passive}
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

echo "cli_mpi_test: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
