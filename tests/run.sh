#!/usr/bin/env bash
# Runs every test program of one build variant, then the CLI tests, and prints the summed
# "N passed, N failed" line. Exits non-zero when any test failed or a program crashed.
# usage: tests/run.sh BUILD_DIR VARIANT BLAS
set -u
build=$1 variant=$2 blas=$3
export LC_BUILD=$build LC_VARIANT=$variant
# Idle OpenMP threads sleep instead of spinning while a test runs its serial double-precision references.
export OMP_WAIT_POLICY=${OMP_WAIT_POLICY:-passive}
passed=0 failed=0
echo "== tests: variant $variant, gemm backend $blas =="
for t in "$build"/tests/test_*; do
    case "$t" in *.d) continue ;; esac
    [ -x "$t" ] || continue
    start=$(date +%s%N)
    out=$("$t" 2>&1); rc=$?
    ms=$(( ($(date +%s%N) - start) / 1000000 ))
    echo "$out" | grep -av '^ok ' 
    line=$(echo "$out" | grep -aE '^[^ ]+: [0-9]+ passed, [0-9]+ failed$' | tail -1)
    if [ -z "$line" ]; then
        echo "CRASH $(basename "$t") (exit $rc, no summary line)"
        failed=$((failed + 1)); continue
    fi
    p=$(echo "$line" | sed -E 's/.*: ([0-9]+) passed, ([0-9]+) failed/\1/')
    f=$(echo "$line" | sed -E 's/.*: ([0-9]+) passed, ([0-9]+) failed/\2/')
    if [ "$rc" -ne 0 ] && [ "$f" -eq 0 ]; then f=1; echo "FAIL $(basename "$t") exited $rc"; fi
    echo "   ($(basename "$t"): ${ms} ms)"
    passed=$((passed + p)); failed=$((failed + f))
done
for s in tests/cli_test.sh; do
    [ -f "$s" ] || continue
    out=$(bash "$s" "$build/longctx" 2>&1); rc=$?
    echo "$out" | grep -av '^ok '
    line=$(echo "$out" | grep -aE '^[^ ]+: [0-9]+ passed, [0-9]+ failed$' | tail -1)
    if [ -z "$line" ]; then echo "CRASH $s (exit $rc)"; failed=$((failed + 1)); continue; fi
    p=$(echo "$line" | sed -E 's/.*: ([0-9]+) passed, ([0-9]+) failed/\1/')
    f=$(echo "$line" | sed -E 's/.*: ([0-9]+) passed, ([0-9]+) failed/\2/')
    if [ "$rc" -ne 0 ] && [ "$f" -eq 0 ]; then f=1; fi
    passed=$((passed + p)); failed=$((failed + f))
done
echo "$variant: $passed passed, $failed failed"
[ "$failed" -eq 0 ] && [ "$passed" -gt 0 ]
