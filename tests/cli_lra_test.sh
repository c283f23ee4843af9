#!/usr/bin/env bash
# CLI tests of `longctx listops` (Long Range Arena's ListOps generator): usage errors (exit 2), files that
# cannot be written (exit 1 or 2, one line naming the file, nothing left behind; written as checkpoints are:
# no symlink followed, no device replaced, the mode kept, no temporary file left by SIGTERM or kill -9), a small run: LRA's TSV
# format, the JSON statistics line, determinism in the seed, and every Target checked by the independent
# Python evaluator (tests/reference/listops_ref.py) when python3 is installed.
# usage: tests/cli_lra_test.sh path/to/longctx
set -u
bin=$1
cli_one_line_errors=1
source "$(dirname "${BASH_SOURCE[0]}")/cli_lib.sh"

lo=("$bin" listops)
# usage errors
expect 2 "listops: --n is required" -- "${lo[@]}"
expect 2 "listops: --seed is required" -- "${lo[@]}" --n 5 --out "$tmp/a.tsv"
expect 2 "listops: --out is required" -- "${lo[@]}" --n 5 --seed 1
expect 2 "listops: --n must be in 1\.\." -- "${lo[@]}" --n 0 --seed 1 --out "$tmp/a.tsv"
expect 2 "listops: --n must be in 1\.\." -- "${lo[@]}" --n -3 --seed 1 --out "$tmp/a.tsv"
expect 2 "listops: --n expects a number, got 'ten'" -- "${lo[@]}" --n ten --seed 1 --out "$tmp/a.tsv"
expect 2 "listops: --seed expects an integer in 0\.\.18446744073709551615, got '-1'" -- "${lo[@]}" --n 5 --seed -1 \
    --out "$tmp/a.tsv"
expect 2 "listops: --out needs a value" -- "${lo[@]}" --n 5 --seed 1 --out
expect 2 "listops: --out needs a file name" -- "${lo[@]}" --n 5 --seed 1 --out ""
expect 2 "listops: unknown flag --depth" -- "${lo[@]}" --n 5 --seed 1 --out "$tmp/a.tsv" --depth 3
expect 2 "listops: lengths must satisfy" -- "${lo[@]}" --n 5 --seed 1 --out "$tmp/a.tsv" --min-length 50 --max-length 40
expect 2 "listops: max_depth must be in 1\.\." -- "${lo[@]}" --n 5 --seed 1 --out "$tmp/a.tsv" --max-depth 0
expect 2 "listops: with max_depth 2 and max_args 3 no sequence is longer than 5" -- "${lo[@]}" --n 5 --seed 1 \
    --out "$tmp/a.tsv" --max-depth 2 --max-args 3 --min-length 10
expect 2 "listops: unexpected argument 'extra'" -- "${lo[@]}" --n 5 --seed 1 --out "$tmp/a.tsv" extra
expect 2 "listops: --json prints on stdout, so it needs --out FILE" -- "${lo[@]}" --n 5 --seed 1 --out - --json
check "no file from usage errors" -- test ! -e "$tmp/a.tsv"
check "listops --help" -- "${lo[@]}" --help
cp "$tmp/out" "$tmp/help.txt"
check "listops --help lists --seed" -- grep -q -- "--seed" "$tmp/help.txt"

# files that cannot be written
expect 1 "longctx: error: $tmp/missing/a.tsv: directory $tmp/missing: No such file or directory" -- "${lo[@]}" --n 5 \
    --seed 1 --out "$tmp/missing/a.tsv"
mkdir "$tmp/dir.tsv"
expect 2 "$tmp/dir.tsv: is a directory, not a regular file: refusing to replace it with a TSV file" -- "${lo[@]}" --n 5 \
    --seed 1 --out "$tmp/dir.tsv"
check "a failed write leaves no temporary file" -- test -z "$(ls "$tmp" | grep -v '^dir.tsv$\|^out$\|^err$\|^help.txt$')"

# a small run: header, rows, JSON statistics, the summary line on stderr
check "listops --n 30" -- "${lo[@]}" --n 30 --seed 5 --out "$tmp/a.tsv" --json
cp "$tmp/out" "$tmp/a.json"
check "header Source<TAB>Target" -- test "$(head -1 "$tmp/a.tsv")" = "$(printf 'Source\tTarget')"
check "31 lines" -- test "$(wc -l <"$tmp/a.tsv")" -eq 31
check "rows are SOURCE<TAB>DIGIT, sources in LRA's form" -- test "$(tail -n +2 "$tmp/a.tsv" |
    grep -cE $'^\\( \\( [][()MINAXEDS0-9 ]+ \\] \\)\t[0-9]$')" -eq 30
check "JSON line" -- grep -Eq '^\{"examples":30,"seed":5,"trees":[0-9]+,.*"depth_max":(9|10),"labels":\[[0-9,]+\],"ops":\{"MIN":[0-9]+,"MAX":[0-9]+,"MED":[0-9]+,"SM":[0-9]+\},"bytes":[0-9]+,"seconds":[0-9.]+\}$' "$tmp/a.json"
check "JSON bytes is the file size" -- grep -q "\"bytes\":$(wc -c <"$tmp/a.tsv")," "$tmp/a.json"
check "listops without --json" -- "${lo[@]}" --n 3 --seed 5 --out "$tmp/c.tsv"
cp "$tmp/out" "$tmp/c.out"
cp "$tmp/err" "$tmp/c.err"
check "summary line on stderr" -- grep -Eq "^listops: wrote 3 sequences to $tmp/c.tsv in [0-9.]+ s \(seed 5;" "$tmp/c.err"
check "nothing on stdout without --json" -- test ! -s "$tmp/c.out"

# the generator's parameters: shorter trees for a curriculum (every length in the window, checked by the JSON)
check "listops --min-length 20 --max-length 60" -- "${lo[@]}" --n 40 --seed 5 --out "$tmp/short.tsv" --json \
    --min-length 20 --max-length 60
cp "$tmp/out" "$tmp/short.json"
pycheck "short trees: lengths within 21..59" -- python3 -c 'import json,sys; d=json.loads(open(sys.argv[1]).read())
assert d["examples"] == 40 and 21 <= d["length_min"] and d["length_max"] <= 59, d' "$tmp/short.json"
check "--max-depth 3 writes trees of depth at most 3" -- "${lo[@]}" --n 20 --seed 5 --out "$tmp/shallow.tsv" --json \
    --max-depth 3 --min-length 5 --max-length 100
cp "$tmp/out" "$tmp/shallow.json"
check "depth_max <= 3" -- grep -Eq '"depth_max":[1-3],' "$tmp/shallow.json"

# deterministic in the seed; - writes the same bytes to stdout; another seed writes other sequences
check "same seed again" -- "${lo[@]}" --n 30 --seed 5 --out "$tmp/b.tsv"
check "same seed, same file" -- cmp -s "$tmp/a.tsv" "$tmp/b.tsv"
"${lo[@]}" --n 30 --seed 5 --out - >"$tmp/stdout.tsv" 2>/dev/null
check "--out - writes the same bytes" -- cmp -s "$tmp/a.tsv" "$tmp/stdout.tsv"
check "seed 2^64-1" -- "${lo[@]}" --n 30 --seed 18446744073709551615 --out "$tmp/d.tsv"
check "another seed, other sequences" -- test -z "$(comm -12 <(sort "$tmp/a.tsv" | grep -v Source) \
    <(sort "$tmp/d.tsv" | grep -v Source))"
cp "$tmp/a.tsv" "$tmp/keep.tsv"
check "overwrites an existing file" -- "${lo[@]}" --n 30 --seed 6 --out "$tmp/b.tsv"
check "the overwritten file is the new split" -- test "$(wc -l <"$tmp/b.tsv")" -eq 31 -a -n "$(cmp "$tmp/b.tsv" "$tmp/keep.tsv")"

# --out goes through the checkpoints' atomic writer: no predictable temporary name followed through a
# symlink (planted at OUT.tmp.PID, the process's own id: the subshell execs it), a FIFO or device refused
# rather than replaced, the file's mode kept, no temporary file left by SIGTERM, and a kill -9's leftover removed
printf 'victim\n' >"$tmp/victim"; chmod 600 "$tmp/victim"
check "listops beside a planted symlink" -- bash -c 'ln -s "$1/victim" "$1/lo.tsv.tmp.$$" && shift && exec "$@"' _ "$tmp" \
    "${lo[@]}" --n 30 --seed 5 --out "$tmp/lo.tsv"
check "the symlinks' target is untouched" -- test "$(cat "$tmp/victim")" = victim
check "the output is a regular file, not a symlink" -- test -f "$tmp/lo.tsv" -a ! -L "$tmp/lo.tsv"
rm -f "$tmp"/lo.tsv.tmp.*
mkfifo "$tmp/fifo"
expect 2 "fifo: is a FIFO, not a regular file: refusing to replace it with a TSV file" -- "${lo[@]}" --n 3 --seed 5 --out "$tmp/fifo"
check "the FIFO is still a FIFO" -- test -p "$tmp/fifo"
expect 2 "null: is a character device" -- "${lo[@]}" --n 3 --seed 5 --out /dev/null
check "/dev/null is still a device" -- test -c /dev/null
chmod 600 "$tmp/lo.tsv"
check "listops over a 0600 file" -- "${lo[@]}" --n 30 --seed 6 --out "$tmp/lo.tsv"
check "the file keeps mode 600" -- test "$(stat -c %a "$tmp/lo.tsv")" = 600
"${lo[@]}" --n 2000000 --seed 1 --out "$tmp/big.tsv" 2>/dev/null &
pid=$!
for ((i = 0; i < 400; i++)); do ls "$tmp"/big.tsv.tmp.* >/dev/null 2>&1 && break; sleep 0.05; done
check "a temporary file while it writes" -- ls "$tmp"/big.tsv.tmp.$pid.*
kill -TERM $pid; wait $pid; rc=$?
check "SIGTERM ends it (exit 143)" -- test $rc -eq 143
check "SIGTERM leaves no temporary file and no output" -- test -z "$(ls "$tmp" | grep '^big.tsv')"
"${lo[@]}" --n 2000000 --seed 1 --out "$tmp/big.tsv" 2>/dev/null &
pid=$!
for ((i = 0; i < 400; i++)); do ls "$tmp"/big.tsv.tmp.* >/dev/null 2>&1 && break; sleep 0.05; done
{ kill -KILL $pid; wait $pid; } 2>/dev/null
check "kill -9 leaves its temporary file" -- ls "$tmp"/big.tsv.tmp.$pid.*
check "the next write" -- "${lo[@]}" --n 3 --seed 1 --out "$tmp/big.tsv"
check "removes the leftover" -- test "$(ls "$tmp" | grep -c '^big.tsv')" -eq 1

# every row checked by the independent Python evaluator (Target, lengths, depth, arguments, duplicates)
if command -v python3 >/dev/null 2>&1; then
    check "python evaluator agrees with every Target" -- python3 tests/reference/listops_ref.py check "$tmp/a.tsv" \
        "$tmp/d.tsv"
else
    echo "note: python3 not found: the Python check of the generated rows was skipped"
fi

# the shipped ListOps model (docs/results/lra.md) reads any file in the ListOps format: ours, and the one the
# independent Python implementation wrote (tests/reference/listops_ref.py)
ship=models/listops-best.safetensors
for f in "$tmp/a.tsv" tests/fixtures/listops_ref.tsv; do
    n=$(($(wc -l <"$f") - 1))
    check "$ship scores $(basename "$f")" -- "$bin" eval --ckpt "$ship" --task classify --data "$f" --json
    tail -1 "$tmp/out" >"$tmp/ship.json"
    check "$ship on $(basename "$f"): accuracy over $n examples" -- \
        grep -Eq "^\{\"accuracy\":[0-9.]+,\"examples\":$n\}$" "$tmp/ship.json"
done

cli_summary cli_lra_test
