#!/usr/bin/env bash
# `make check`: the test suite on every build variant, a build of the benchmark drivers, then one overall "N passed, N failed" line.
set -u
passed=0 failed=0
for v in release noblas noomp asan; do
    log=$(mktemp)
    make -s VARIANT=$v test 2>&1 | tee "$log"
    line=$(grep -E "^$v: [0-9]+ passed, [0-9]+ failed$" "$log" | tail -1)
    if [ -z "$line" ]; then echo "variant $v: build or run failed"; failed=$((failed + 1)); rm -f "$log"; continue; fi
    p=$(echo "$line" | sed -E 's/.*: ([0-9]+) passed, ([0-9]+) failed/\1/')
    f=$(echo "$line" | sed -E 's/.*: ([0-9]+) passed, ([0-9]+) failed/\2/')
    passed=$((passed + p)); failed=$((failed + f)); rm -f "$log"
done
# the benchmark drivers (bench/*.c) are not run here, but they must keep building against the library
if make -s VARIANT=release bench >/dev/null 2>&1; then echo "bench programs: build passed"; passed=$((passed + 1))
else echo "bench programs: build FAILED (make VARIANT=release bench)"; failed=$((failed + 1)); fi
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
