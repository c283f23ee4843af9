#!/usr/bin/env bash
# `make check`: the test suite on three build variants (release; minimal: the built-in gemm and no OpenMP, the
# build without either optional dependency; asan: AddressSanitizer + UBSan), a build of the benchmark
# drivers, `make install` into a temporary prefix with the README's library example built against it
# (tests/install_test.sh), then one overall "N passed, N failed" line. Builds run with one job per core.
# The built-in gemm's OpenMP path, which no variant runs a model on, has its own tests in the release
# variant (tests/test_gemm.c: the same bits on 1 and 2 threads, calls from inside parallel threads).
set -u
passed=0 failed=0
jobs=$(nproc 2>/dev/null || echo 2)
for v in release minimal asan; do
    log=$(mktemp)
    make -s -j"$jobs" VARIANT=$v test 2>&1 | tee "$log"
    line=$(grep -E "^$v: [0-9]+ passed, [0-9]+ failed$" "$log" | tail -1)
    if [ -z "$line" ]; then echo "variant $v: build or run failed"; failed=$((failed + 1)); rm -f "$log"; continue; fi
    p=$(echo "$line" | sed -E 's/.*: ([0-9]+) passed, ([0-9]+) failed/\1/')
    f=$(echo "$line" | sed -E 's/.*: ([0-9]+) passed, ([0-9]+) failed/\2/')
    passed=$((passed + p)); failed=$((failed + f)); rm -f "$log"
done
# the benchmark drivers (bench/*.c) are not run here, but they must keep building against the library
if make -s VARIANT=release bench >/dev/null 2>&1; then echo "bench programs: build passed"; passed=$((passed + 1))
else echo "bench programs: build FAILED (make VARIANT=release bench)"; failed=$((failed + 1)); fi
# make install PREFIX=$(mktemp -d), the exported names, examples/hello.c via pkg-config (shared and static)
log=$(mktemp)
bash tests/install_test.sh 2>&1 | tee "$log"
line=$(grep -E '^install: [0-9]+ passed, [0-9]+ failed$' "$log" | tail -1); rm -f "$log"
if [ -z "$line" ]; then echo "install test: crashed"; failed=$((failed + 1))
else
    passed=$((passed + $(echo "$line" | sed -E 's/.*: ([0-9]+) passed.*/\1/')))
    failed=$((failed + $(echo "$line" | sed -E 's/.*, ([0-9]+) failed/\1/')))
fi
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
