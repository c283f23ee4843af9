#!/usr/bin/env bash
# Runs every test program of one build variant and the CLI tests, and prints the summed
# "N passed, N failed" line. Exits non-zero when any test failed or a program crashed.
# With OpenBLAS in the release variant the C tests run again with OpenBLAS's kernels forced to each
# path that x86-64 machines of this project dispatch to (Haswell: AVX2, what Zen gets; SkylakeX:
# AVX-512, what Intel gets), so a result that depends on the CPU's dispatch fails here on any machine; the
# path OpenBLAS already takes on this CPU is not run a second time.
# With MPI in the build (MPI=1) and mpirun on the PATH, the release variant also runs the 2-process test
# tests/cli_mpi_test.sh (the other variants build the MPI code but do not start processes; docs/guides/distributed.md).
# The C programs and the CLI scripts share nothing (each writes under its own temporary folder): they run
# LC_TEST_JOBS at a time (default: one per core), the slowest first, and their outputs are printed in order.
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

# The jobs that take longest (measured in the release and asan variants on 2 cores), started first so that
# the others fill the gaps beside them instead of one long job running alone at the end.
slow_first=(cli_mpi_test.sh cli_seq2seq_test.sh cli_summary_test.sh cli_ux_test.sh test_checkpoint py_test.sh
    docs_commands_test.sh cli_consistency_test.sh cli_hibert_test.sh cli_test.sh cli_lra_test.sh cli_pics_test.sh
    cli_crash_test.sh test_attn_bigbird test_gemm_bf16 test_seq2seq test_precision test_train cli_classify_test.sh
    test_hibert_intruders test_attn_global test_attn_block test_attn_strided test_attn_rel test_gemm)

# The queue: job i is named names[i] and runs the command line cmds[i] (words quoted with printf %q).
names=() cmds=()
queue() { # queue NAME COMMAND...
    names+=("$1"); shift
    cmds+=("$(printf '%q ' "$@")")
}

# Queues every C test program, with the environment assignments given as arguments.
queue_programs() {
    local t
    for t in "$build"/tests/test_*; do
        case "$t" in *.d) continue ;; esac
        [ -x "$t" ] && queue "$(basename "$t")${1:+ [$*]}" env "$@" "$t"
    done
}

# The OpenBLAS path ("Haswell", "SkylakeX", ...) a C test program takes on this CPU without forcing.
openblas_core() {
    OPENBLAS_VERBOSE=2 LC_TEST_ONLY=none "$build/tests/test_gemm" 2>&1 | sed -n 's/^Core: *//p' | head -1
}

# Runs the queue LC_TEST_JOBS jobs at a time (slow_first first), then prints each job's output (without its
# "ok" lines) and time in queue order and counts it.
run_queue() {
    local i j name rc ms tmp jobs=${LC_TEST_JOBS:-$(nproc 2>/dev/null || echo 1)}
    local order=() first=()
    tmp=$(mktemp -d)
    for name in "${slow_first[@]}"; do
        for i in "${!names[@]}"; do [ "${names[$i]%% *}" = "$name" ] && first+=("$i"); done
    done
    order=("${first[@]}")
    for i in "${!names[@]}"; do
        case " ${first[*]} " in *" $i "*) ;; *) order+=("$i") ;; esac
    done
    for i in "${order[@]}"; do
        while [ "$(jobs -rp | wc -l)" -ge "$jobs" ]; do wait -n; done
        (
            start=$(date +%s%N)
            eval "${cmds[$i]}" >"$tmp/$i.out" 2>&1
            echo "$? $(( ($(date +%s%N) - start) / 1000000 ))" >"$tmp/$i.rc"
        ) &
    done
    wait
    for i in "${!names[@]}"; do
        j=$(cat "$tmp/$i.out")
        read -r rc ms <"$tmp/$i.rc" || { rc=1; ms=0; }
        echo "$j" | grep -av '^ok '
        echo "   (${names[$i]}: ${ms} ms)"
        count "$j" "$rc" "${names[$i]}"
    done
    rm -rf "$tmp"
}

echo "== tests: variant $variant, gemm backend $blas =="
queue_programs
if [ "$blas" = openblas ] && [ "$variant" = release ] && grep -qw avx512f /proc/cpuinfo 2>/dev/null; then
    own=$(openblas_core)
    for core in Haswell SkylakeX; do
        if [ "$core" = "$own" ]; then
            echo "== C tests with OpenBLAS's $core kernels: the path this CPU takes, run above =="
        else
            echo "== C tests again with OpenBLAS kernels forced to $core (this CPU takes ${own:-an unnamed path}) =="
            queue_programs OPENBLAS_CORETYPE=$core
        fi
    done
fi
cli_tests="tests/cli_test.sh tests/cli_ux_test.sh tests/cli_summary_test.sh tests/cli_hibert_test.sh tests/cli_lra_test.sh tests/cli_classify_test.sh tests/cli_seq2seq_test.sh tests/cli_crash_test.sh tests/cli_consistency_test.sh tests/cli_pics_test.sh$([ "$variant" = release ] && echo " tests/py_test.sh tests/docs_links_test.sh tests/docs_commands_test.sh")"
if [ "$mpi" = 1 ] && [ "$variant" = release ] && command -v mpirun >/dev/null; then cli_tests+=" tests/cli_mpi_test.sh"; fi
for s in $cli_tests; do
    [ -f "$s" ] && queue "$(basename "$s")" bash "$s" "$build/longctx"
done
run_queue
echo "$variant: $passed passed, $failed failed"
[ "$failed" -eq 0 ] && [ "$passed" -gt 0 ]
