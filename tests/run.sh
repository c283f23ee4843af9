#!/usr/bin/env bash
# Runs every test program of one build variant, then the CLI tests, and prints the summed
# "N passed, N failed" line. Exits non-zero when any test failed or a program crashed.
# With OpenBLAS in the release variant the C tests run again with OpenBLAS's kernels forced to each
# path that x86-64 machines of this project dispatch to (Haswell: AVX2, what Zen gets; SkylakeX:
# AVX-512, what Intel gets), so a result that depends on the CPU's dispatch fails here on any machine.
# With MPI in the build (MPI=1) and mpirun on the PATH, the release variant also runs the 2-process test
# tests/cli_mpi_test.sh (the other variants build the MPI code but do not start processes; docs/guides/distributed.md).
# usage: tests/run.sh BUILD_DIR VARIANT BLAS [MPI]
set -u
build=$1 variant=$2 blas=$3 mpi=${4:-0}
export LC_BUILD=$build LC_VARIANT=$variant
# Idle OpenMP threads sleep instead of spinning while a test runs its serial double-precision references.
export OMP_WAIT_POLICY=${OMP_WAIT_POLICY:-passive}
passed=0 failed=0

# Adds one program's "name: N passed, N failed" line (from its output $1, exit status $2) to the totals.
count() {
    local out=$1 rc=$2 name=$3 line p f
    line=$(echo "$out" | grep -aE '^[^ ]+: [0-9]+ passed, [0-9]+ failed$' | tail -1)
    if [ -z "$line" ]; then
        echo "CRASH $name (exit $rc, no summary line)"
        failed=$((failed + 1)); return
    fi
    p=$(echo "$line" | sed -E 's/.*: ([0-9]+) passed, ([0-9]+) failed/\1/')
    f=$(echo "$line" | sed -E 's/.*: ([0-9]+) passed, ([0-9]+) failed/\2/')
    if [ "$rc" -ne 0 ] && [ "$f" -eq 0 ]; then f=1; echo "FAIL $name exited $rc"; fi
    passed=$((passed + p)); failed=$((failed + f))
}

# The programs that take longest (measured in the release and asan variants), started first so that the
# others fill the gaps beside them instead of one long program running alone at the end.
slow_first=(test_checkpoint test_train test_attn_bigbird test_precision test_seq2seq test_hibert_intruders
    test_attn_block test_attn_strided test_attn_global test_gemm_bf16 test_gemm)

# Runs every C test program, with the environment assignments given as arguments: LC_TEST_JOBS programs at a
# time (default: one per core; the programs share nothing, each writes under its own mkdtemp folder; the
# slow_first ones start first), then prints their outputs and times in name order and counts them.
run_programs() {
    local t name out rc ms tmp jobs=${LC_TEST_JOBS:-$(nproc 2>/dev/null || echo 1)}
    local programs=() order=()
    tmp=$(mktemp -d)
    for t in "$build"/tests/test_*; do
        case "$t" in *.d) continue ;; esac
        [ -x "$t" ] && programs+=("$t")
    done
    for name in "${slow_first[@]}"; do
        [ -x "$build/tests/$name" ] && order+=("$build/tests/$name")
    done
    for t in "${programs[@]}"; do
        case " ${slow_first[*]} " in *" $(basename "$t") "*) ;; *) order+=("$t") ;; esac
    done
    for t in "${order[@]}"; do
        while [ "$(jobs -rp | wc -l)" -ge "$jobs" ]; do wait -n; done
        name=$(basename "$t")
        (
            start=$(date +%s%N)
            env "$@" "$t" >"$tmp/$name.out" 2>&1
            echo "$? $(( ($(date +%s%N) - start) / 1000000 ))" >"$tmp/$name.rc"
        ) &
    done
    wait
    for t in "${programs[@]}"; do
        name=$(basename "$t")
        out=$(cat "$tmp/$name.out")
        read -r rc ms <"$tmp/$name.rc" || { rc=1; ms=0; }
        echo "$out" | grep -av '^ok '
        echo "   ($name${1:+ [$*]}: ${ms} ms)"
        count "$out" "$rc" "$name${1:+ [$*]}"
    done
    rm -rf "$tmp"
}

echo "== tests: variant $variant, gemm backend $blas =="
run_programs
if [ "$blas" = openblas ] && [ "$variant" = release ] && grep -qw avx512f /proc/cpuinfo 2>/dev/null; then
    for core in Haswell SkylakeX; do
        echo "== C tests again with OpenBLAS kernels forced to $core =="
        run_programs OPENBLAS_CORETYPE=$core
    done
fi
cli_tests="tests/cli_test.sh tests/cli_ux_test.sh tests/cli_summary_test.sh tests/cli_hibert_test.sh tests/cli_lra_test.sh tests/cli_classify_test.sh tests/cli_seq2seq_test.sh tests/cli_crash_test.sh tests/cli_consistency_test.sh tests/cli_pics_test.sh$([ "$variant" = release ] && echo " tests/py_test.sh tests/docs_links_test.sh tests/docs_commands_test.sh")"
if [ "$mpi" = 1 ] && [ "$variant" = release ] && command -v mpirun >/dev/null; then cli_tests+=" tests/cli_mpi_test.sh"; fi
for s in $cli_tests; do
    [ -f "$s" ] || continue
    out=$(bash "$s" "$build/longctx" 2>&1); rc=$?
    echo "$out" | grep -av '^ok '
    count "$out" "$rc" "$s"
done
echo "$variant: $passed passed, $failed failed"
[ "$failed" -eq 0 ] && [ "$passed" -gt 0 ]
