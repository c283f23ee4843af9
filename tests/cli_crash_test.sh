#!/usr/bin/env bash
# Runs that keep their work (issue 12, items 1 and 2): a training run killed with SIGKILL at random
# moments and resumed, ten times, ends bit-identical to an uninterrupted one and leaves no temporary file;
# SIGINT/SIGTERM/SIGHUP stop after the step and save; --out is checked before the first step (not the data file,
# not a device, a writable directory, a name that fits); saves keep the file's mode, never follow a
# symlink at a temporary name and remove stale temporary files of killed runs; --resume writes back to
# its checkpoint and trains on the data it records.
# Kill times scale with the measured duration of an uninterrupted run, so the test holds for the ASan
# build and on a loaded machine. Last line: "cli_crash_test: N passed, N failed".
# usage: tests/cli_crash_test.sh path/to/longctx
set -u
bin=$(cd "$(dirname "$1")" && pwd)/$(basename "$1") # absolute: some commands run from another directory
# Idle OpenMP threads sleep: spinning ones made a run 7x slower on a loaded 2-core machine (as tests/run.sh).
export OMP_WAIT_POLICY=${OMP_WAIT_POLICY:-passive}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
passed=0 failed=0
expect() { # expect CODE PATTERN -- command...: exit code CODE and stderr matching PATTERN (grep -E)
    local code=$1 pattern=$2; shift 3
    "$@" >"$tmp/out" 2>"$tmp/err"
    local rc=$?
    if [ "$rc" -eq "$code" ] && grep -Eq -- "$pattern" "$tmp/err"; then passed=$((passed + 1)); else
        failed=$((failed + 1)); echo "FAIL: $* -> exit $rc (want $code), stderr: $(head -c 400 "$tmp/err")"; fi
}
check() { # check DESCRIPTION -- command: succeeds when the command does
    local what=$1; shift 2
    if "$@" >"$tmp/out" 2>"$tmp/err"; then passed=$((passed + 1)); else
        failed=$((failed + 1)); echo "FAIL: $what: $(tail -c 400 "$tmp/err")"; fi
}
now_ms() { echo $(( $(date +%s%N) / 1000000 )); }
mode_of() { stat -c %a "$1"; }

head -c 60000 data/tinyshakespeare.txt >"$tmp/small.txt"
cp "$tmp/small.txt" "$tmp/small.orig"
tiny=(--preset tiny --layers 1 --dim 32 --heads 2 --ffn 64 --seg-len 16 --batch 2 --threads 2 --eval-every 0
      --eval-bytes 500)

# ---- --out is checked before the first step ------------------------------------------------------
# --out = --data used to replace the training data with the checkpoint (also under another name of it)
expect 2 "--out .*small.txt is the training data file" -- "$bin" train "${tiny[@]}" --data "$tmp/small.txt" \
    --steps 2 --out "$tmp/small.txt"
ln "$tmp/small.txt" "$tmp/hardlink.txt"
expect 2 "is the training data file" -- "$bin" train "${tiny[@]}" --data "$tmp/small.txt" --steps 2 \
    --out "$tmp/hardlink.txt"
check "the training data is intact" -- cmp -s "$tmp/small.txt" "$tmp/small.orig"
rm "$tmp/hardlink.txt"
# a device used to be replaced by a regular file (as root, --out /dev/null would replace /dev/null); a node
# of our own when root (mknod), else /dev/null, which is refused from its stat alone and never opened
if [ "$(id -u)" -eq 0 ] && mknod "$tmp/null" c 1 3 2>/dev/null; then dev="$tmp/null"; else dev=/dev/null; fi
expect 2 "$dev: is a character device, not a regular file" -- "$bin" train "${tiny[@]}" --data "$tmp/small.txt" \
    --steps 2 --out "$dev"
check "the device node is still a device" -- test -c "$dev"
mkfifo "$tmp/fifo"
expect 2 "fifo: is a FIFO" -- timeout 10 "$bin" train "${tiny[@]}" --data "$tmp/small.txt" --steps 2 --out "$tmp/fifo"
expect 1 "nodir/x.ckpt: directory .*nodir: No such file" -- "$bin" train "${tiny[@]}" --data "$tmp/small.txt" \
    --steps 2 --out "$tmp/nodir/x.ckpt"
long=$(printf 'n%.0s' $(seq 240))
expect 2 "the name is too long" -- "$bin" train "${tiny[@]}" --data "$tmp/small.txt" --steps 2 --out "$tmp/$long"
if [ "$(id -u)" -ne 0 ]; then # root passes permission checks, so this case only means something for others
    mkdir "$tmp/ro" && chmod 555 "$tmp/ro"
    expect 1 "ro/x.ckpt: directory .* is not writable" -- "$bin" train "${tiny[@]}" --data "$tmp/small.txt" \
        --steps 2 --out "$tmp/ro/x.ckpt"
else
    echo "note: running as root: the unwritable-directory case is skipped (permissions do not apply to root)"
fi
expect 2 "--save-every and --save-every-min need --out" -- "$bin" train "${tiny[@]}" --data "$tmp/small.txt" \
    --steps 2 --save-every 1

# ---- warnings for settings that make a run useless ----------------------------------------------
expect 0 "warning: --warmup 100 is longer than the run \(--steps 3\)" -- "$bin" train "${tiny[@]}" \
    --data "$tmp/small.txt" --steps 3 --warmup 100
expect 0 "warning: --eval-every 50 is not below --steps 3" -- "$bin" train "${tiny[@]}" --data "$tmp/small.txt" \
    --steps 3 --warmup 0 --eval-every 50
expect 0 "warning: --stop-after without --out" -- "$bin" train "${tiny[@]}" --data "$tmp/small.txt" --steps 3 \
    --warmup 0 --stop-after 1

# ---- --resume: writes back to its checkpoint, trains on the data it records ----------------------
run=("${tiny[@]}" --data "$tmp/small.txt" --steps 8 --warmup 2)
check "uninterrupted 8 steps" -- "$bin" train "${run[@]}" --out "$tmp/ref8.ckpt"
check "4 of 8 steps" -- "$bin" train "${run[@]}" --stop-after 4 --out "$tmp/half.ckpt"
# from another directory and without --data: the recorded (absolute) data path is used
check "resume without --out and --data" -- bash -c "cd / && '$bin' train --resume '$tmp/half.ckpt'"
check "resume wrote back to its checkpoint, equal to the uninterrupted run" -- cmp -s "$tmp/half.ckpt" "$tmp/ref8.ckpt"
check "4 of 8 steps again" -- "$bin" train "${run[@]}" --stop-after 4 --out "$tmp/half.ckpt"
cp "$tmp/half.ckpt" "$tmp/half0.ckpt"
head -c 60000 data/tinyshakespeare.txt | tr 'a-z' 'A-Z' >"$tmp/small.txt" # the recorded file changes
expect 1 "small.txt, the data .*half.ckpt was trained on, has changed.*give --data" -- "$bin" train \
    --resume "$tmp/half.ckpt"
check "the refused resume left the checkpoint as it was" -- cmp -s "$tmp/half.ckpt" "$tmp/half0.ckpt"
expect 0 "warning: --data .*small.txt is not the data .*half.ckpt was trained on" -- "$bin" train \
    --resume "$tmp/half.ckpt" --data "$tmp/small.txt" --out "$tmp/other.ckpt"
cp "$tmp/small.orig" "$tmp/small.txt"
cp "$tmp/small.orig" "$tmp/copy.txt"
check "resume --data: the same bytes under another name" -- "$bin" train --resume "$tmp/half.ckpt" \
    --data "$tmp/copy.txt" --out "$tmp/copy.ckpt"
check "... gives no warning" -- test -z "$(grep warning "$tmp/err")"

# ---- eval follows the data a checkpoint records; exports and runs without --out get a warning ------
expect 0 "^data: .*/small.txt, the data .*ref8.ckpt was trained on \(--data FILE" -- bash -c \
    "cd / && '$bin' eval --ckpt '$tmp/ref8.ckpt' --threads 2"
cp "$tmp/out" "$tmp/eval.out"
check "eval of the recorded data scores its valid split" -- grep -q "^valid bpc [0-9.]* over [0-9]* bytes of .*/small.txt$" "$tmp/eval.out"
head -c 30000 data/tinyshakespeare.txt >"$tmp/other.txt"
check "eval --data: the given file, nothing said" -- "$bin" eval --ckpt "$tmp/ref8.ckpt" --data "$tmp/other.txt" --threads 2
cp "$tmp/out" "$tmp/eval.out"
check "... no data line" -- test -z "$(grep '^data:' "$tmp/err")"
check "... of the given file" -- grep -q "bytes of $tmp/other.txt$" "$tmp/eval.out"
tr 'a-z' 'A-Z' <"$tmp/small.orig" >"$tmp/small.txt"
expect 1 "error: eval: .*small.txt, the data .*ref8.ckpt was trained on, has changed.*give --data FILE" -- \
    "$bin" eval --ckpt "$tmp/ref8.ckpt" --threads 2
check "... one line" -- test "$(wc -l <"$tmp/err")" -eq 1
mv "$tmp/small.txt" "$tmp/small.moved"
expect 1 "error: eval: .*small.txt, the data .*ref8.ckpt was trained on, cannot be read \(cannot open: No such file.*give --data FILE" -- \
    "$bin" eval --ckpt "$tmp/ref8.ckpt" --threads 2
check "... one line" -- test "$(wc -l <"$tmp/err")" -eq 1
expect 1 "error: train: .*small.txt, the data .*half.ckpt was trained on, cannot be read.*give --data FILE" -- \
    "$bin" train --resume "$tmp/half.ckpt"
cp "$tmp/small.orig" "$tmp/small.txt"
rm "$tmp/small.moved"
# without --out the model is thrown away: said before the first step
expect 0 "warning: no --out: the trained model will not be saved" -- "$bin" train "${run[@]}" --steps 1
check "... before the first step" -- test "$(grep -n 'warning: no --out' "$tmp/err" | cut -d: -f1)" -lt \
    "$(grep -n 'step 1/' "$tmp/err" | head -1 | cut -d: -f1)"
# --resume from an export: AdamW restarts from zero moments (docs/reference/checkpoint.md)
check "export the 4-step checkpoint" -- "$bin" export --ckpt "$tmp/half0.ckpt" --out "$tmp/half.safetensors"
expect 0 "warning: .*half.safetensors has no optimizer state \(an export\): AdamW restarts" -- "$bin" train \
    --resume "$tmp/half.safetensors" --out "$tmp/from_export.ckpt"
check "resume of the checkpoint itself: no such warning" -- "$bin" train --resume "$tmp/half0.ckpt" --out "$tmp/full.ckpt"
check "... none" -- test -z "$(grep 'optimizer state' "$tmp/err")"
# the default data is found from any directory: ./data/tinyshakespeare.txt, else the bundled copy
# (the source tree's for this build; make install's share/longctx for an installed one: tests/install_test.sh)
check "train without --data from another directory" -- bash -c "cd '$tmp' && '$bin' train ${tiny[*]} --steps 1 --out '$tmp/default.ckpt'"
check "... on the bundled corpus" -- bash -c "'$bin' eval --ckpt '$tmp/default.ckpt' --threads 2 2>&1 | grep -q '^data: .*/tinyshakespeare.txt, the data'"

# ---- saves keep the mode, never follow a symlink, remove stale temporary files --------------------
cp "$tmp/half0.ckpt" "$tmp/m.ckpt"
chmod 640 "$tmp/m.ckpt"
check "resume of a mode-640 checkpoint" -- "$bin" train --resume "$tmp/m.ckpt"
check "the saved checkpoint kept mode 640" -- test "$(mode_of "$tmp/m.ckpt")" = 640
check "new checkpoint with umask 027" -- bash -c "umask 027 && '$bin' train ${run[*]} --stop-after 1 --out '$tmp/u.ckpt'"
check "a new checkpoint gets 0666 & ~umask" -- test "$(mode_of "$tmp/u.ckpt")" = 640
# the old temporary name was PATH.tmp.PID: a symlink planted there was followed (the victim overwritten)
printf 'victim' >"$tmp/victim"
check "save with a symlink at PATH.tmp.PID" -- bash -c "ln -s '$tmp/victim' '$tmp/s.ckpt.tmp.'\$\$ && \
    exec '$bin' train ${run[*]} --stop-after 1 --out '$tmp/s.ckpt'"
check "the symlink's target is untouched" -- test "$(cat "$tmp/victim")" = victim
check "the checkpoint is a regular file" -- test -f "$tmp/s.ckpt" -a ! -L "$tmp/s.ckpt"
# stale temporary files: a dead writer's are removed; a live writer's and other checkpoints' are kept
cp "$tmp/half0.ckpt" "$tmp/t.ckpt"
printf 'stale' >"$tmp/t.ckpt.tmp.2147483646.aB3dE9"
printf 'live' >"$tmp/t.ckpt.tmp.$$.aB3dE9"
printf 'other' >"$tmp/t2.ckpt.tmp.2147483646.aB3dE9"
printf 'not a temp' >"$tmp/t.ckpt.tmp.2147483646.aB3dE9x"
check "resume with stale temporary files beside the checkpoint" -- "$bin" train --resume "$tmp/t.ckpt"
check "the dead writer's temporary file is removed" -- test ! -e "$tmp/t.ckpt.tmp.2147483646.aB3dE9"
check "a live writer's temporary file is kept" -- test -e "$tmp/t.ckpt.tmp.$$.aB3dE9"
check "another checkpoint's temporary file is kept" -- test -e "$tmp/t2.ckpt.tmp.2147483646.aB3dE9"
check "a name outside the pattern is kept" -- test -e "$tmp/t.ckpt.tmp.2147483646.aB3dE9x"

# ---- SIGINT / SIGTERM / SIGHUP: finish the step, save, exit 128+N with one clear line -------------------------
long_run=("${tiny[@]}" --data "$tmp/small.txt" --steps 1000000 --warmup 0)
wait_for() { # wait_for FILE SECONDS: until FILE exists
    local i
    for ((i = 0; i < $2 * 20; i++)); do [ -e "$1" ] && return 0; sleep 0.05; done
    return 1
}
"$bin" train "${long_run[@]}" --save-every 3 --out "$tmp/sig.ckpt" >"$tmp/sig.out" 2>"$tmp/sig.err" &
pid=$!
wait_for "$tmp/sig.ckpt" 60
kill -INT $pid
wait $pid
rc=$?
check "SIGINT: exit 130" -- test $rc -eq 130
check "SIGINT: one clear line" -- grep -Eq "^longctx: interrupted by SIGINT at step [0-9]+ of 1000000: saved .*sig.ckpt \(continue with: longctx train --resume .*sig.ckpt\)$" "$tmp/sig.err"
stopped=$(sed -nE 's/.*interrupted by SIGINT at step ([0-9]+) of.*/\1/p' "$tmp/sig.err")
check "SIGINT: the checkpoint holds the last step" -- bash -c "'$bin' train --resume '$tmp/sig.ckpt' --steps ${stopped:-0} 2>&1 | grep -q 'after ${stopped:-x} steps'"
# SIGTERM, and SIGHUP (a closed terminal or ssh session) alike: save, exit 128+N, the same line
for sig in TERM:143 HUP:129; do
    name=${sig%%:*} code=${sig##*:}
    "$bin" train "${long_run[@]}" --out "$tmp/$name.ckpt" >/dev/null 2>"$tmp/$name.err" &
    pid=$!
    # the summary line comes after the handlers are in place: a signal before it would be a race
    for ((i = 0; i < 1200; i++)); do grep -q '^training:' "$tmp/$name.err" && break; sleep 0.05; done
    kill -"$name" $pid
    wait $pid
    rc=$?
    check "SIG$name: exit $code after saving" -- test $rc -eq "$code" -a -f "$tmp/$name.ckpt"
    check "SIG$name: the line" -- grep -Eq "^longctx: interrupted by SIG$name at step [0-9]+ of 1000000: saved .*$name.ckpt" "$tmp/$name.err"
done
# a second signal stops at once; the last periodic checkpoint stays whole
"$bin" train "${long_run[@]}" --save-every 2 --out "$tmp/two.ckpt" >/dev/null 2>"$tmp/two.err" &
pid=$!
wait_for "$tmp/two.ckpt" 60
kill -INT $pid; kill -TERM $pid
wait $pid
rc=$?
check "two signals: ended by the second (exit 130 or 143)" -- test $rc -eq 143 -o $rc -eq 130
check "two signals: the last checkpoint loads" -- "$bin" eval --ckpt "$tmp/two.ckpt" --data "$tmp/small.txt" \
    --split test

# ---- the crash test: ten SIGKILLs at random moments, resumed each time --------------------------------
crash=("${tiny[@]}" --data "$tmp/small.txt" --steps 400 --warmup 5)
t0=$(now_ms)
check "uninterrupted reference run" -- "$bin" train "${crash[@]}" --save-every 1 --out "$tmp/ref.ckpt"
dur=$(( $(now_ms) - t0 ))
RANDOM=${CRASH_SEED:-$$}
landed=0
for i in $(seq 10); do
    if [ -f "$tmp/crash.ckpt" ]; then
        "$bin" train --resume "$tmp/crash.ckpt" --save-every 1 >/dev/null 2>&1 &
    else
        "$bin" train "${crash[@]}" --save-every 1 --out "$tmp/crash.ckpt" >/dev/null 2>&1 &
    fi
    pid=$!
    ms=$(( dur * (30 + RANDOM % 190) / 1000 )) # 3% .. 22% of an uninterrupted run: ten kills land mostly
                                               # during training, a resumed run then ends it
    sleep "$(printf '%d.%03d' $((ms / 1000)) $((ms % 1000)))"
    kill -KILL $pid 2>/dev/null && landed=$((landed + 1))
    wait $pid 2>/dev/null
done
echo "crash test: $landed of 10 kills landed while training ran (uninterrupted run: $dur ms)"
if [ -f "$tmp/crash.ckpt" ]; then
    check "final resume after the kills" -- "$bin" train --resume "$tmp/crash.ckpt" --save-every 1
else
    check "final run after the kills" -- "$bin" train "${crash[@]}" --save-every 1 --out "$tmp/crash.ckpt"
fi
check "killed and resumed 10 times == uninterrupted, byte for byte" -- cmp -s "$tmp/crash.ckpt" "$tmp/ref.ckpt"
check "no temporary file left behind" -- test -z "$(ls "$tmp" | grep '^crash\.ckpt\.tmp\.')"

echo "cli_crash_test: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
