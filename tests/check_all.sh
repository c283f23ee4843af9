#!/usr/bin/env bash
# `make check`: the test suite on three build variants (release, with whatever optional packages are installed;
# minimal: the built-in gemm and no OpenMP; asan: AddressSanitizer + UBSan on the build of a bare machine,
# BARE=1: the built-in gemm with OpenMP threads, no zlib, no MPI, no Python tests), a build of the benchmark
# drivers, `make install` into a temporary prefix with the C library guide's example built against it
# (tests/install_test.sh), then one overall "N passed, N failed" line. Builds run with one job per core.
# The asan variant runs the built-in gemm's OpenMP path under the sanitizers (LeakSanitizer included), as
# `make check` on a bare Debian 12 does. What a machine cannot run is listed under "skipped here:".
set -u
passed=0 failed=0
skips=$(mktemp)
jobs=$(nproc 2>/dev/null || echo 2)
for v in release minimal asan; do
    log=$(mktemp)
    bare=0; [ "$v" = asan ] && bare=1
    make -s -j"$jobs" VARIANT=$v BARE=$bare test 2>&1 | tee "$log"
    grep -aE '^(SKIP|skip )|^ *note: .*(skipped|not tested)' "$log" | sed "s/^ */  /; s/^/[$v] /" >>"$skips"
    line=$(grep -E "^$v: [0-9]+ passed, [0-9]+ failed$" "$log" | tail -1)
    if [ -z "$line" ]; then echo "variant $v: build or run failed"; failed=$((failed + 1)); rm -f "$log"; continue; fi
    p=$(echo "$line" | sed -E 's/.*: ([0-9]+) passed, ([0-9]+) failed/\1/')
    f=$(echo "$line" | sed -E 's/.*: ([0-9]+) passed, ([0-9]+) failed/\2/')
    passed=$((passed + p)); failed=$((failed + f)); rm -f "$log"
done
# the benchmark drivers (bench/*.c) are not run here, but they must keep building against the library
if make -s -j"$jobs" VARIANT=release bench >/dev/null 2>&1; then echo "bench programs: build passed"; passed=$((passed + 1))
else echo "bench programs: build FAILED (make VARIANT=release bench)"; failed=$((failed + 1)); fi
# make install PREFIX=$(mktemp -d), the exported names, examples/hello.c via pkg-config (shared and static)
log=$(mktemp)
bash tests/install_test.sh 2>&1 | tee "$log"
grep -aE '^skip ' "$log" | sed 's/^/[install]   /' >>"$skips"
line=$(grep -E '^install: [0-9]+ passed, [0-9]+ failed$' "$log" | tail -1); rm -f "$log"
if [ -z "$line" ]; then echo "install test: crashed"; failed=$((failed + 1))
else
    passed=$((passed + $(echo "$line" | sed -E 's/.*: ([0-9]+) passed.*/\1/')))
    failed=$((failed + $(echo "$line" | sed -E 's/.*, ([0-9]+) failed/\1/')))
fi
# what this machine could not run (missing optional packages, root, the CPU): listed, never counted
if [ -s "$skips" ]; then echo "skipped here:"; sort -u "$skips"; fi
rm -f "$skips"
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
