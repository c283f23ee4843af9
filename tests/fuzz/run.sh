#!/usr/bin/env bash
# Runs every libFuzzer harness of build/fuzz (make fuzz): each for RUNS executions (or SECONDS seconds when
# SECONDS > 0) from its committed seeds tests/fuzz/corpus/<harness>/ plus what earlier runs added under
# BUILD/fuzz/corpus/<harness>/ (the committed seeds are never written to). A crash, a sanitizer report, a
# leak, a timeout or running out of memory fails the run; the input is left in BUILD/fuzz/findings/.
# FUZZ_JOBS harnesses run at a time (default: one per core).
# Usage: tests/fuzz/run.sh BUILD RUNS [SECONDS]
set -u
build=${1:?build directory}
runs=${2:-2000}
seconds=${3:-0}
fail=0
jobs=${FUZZ_JOBS:-$(nproc 2>/dev/null || echo 1)}
mkdir -p "$build/fuzz/findings"
# One harness: its run, then its line (written to BUILD/fuzz/NAME.line; status 1 when it failed).
run_one() {
    local bin=$1 name seeds work limit start end rc execs
    name=$(basename "$bin")
    seeds=tests/fuzz/corpus/$name
    work=$build/fuzz/corpus/$name
    mkdir -p "$work"
    if [ "$seconds" -gt 0 ]; then limit=(-max_total_time="$seconds"); else limit=(-runs="$runs"); fi
    start=$(date +%s.%N)
    "$bin" "${limit[@]}" -rss_limit_mb=2048 -timeout=30 -max_len=131072 -print_final_stats=1 \
        -artifact_prefix="$build/fuzz/findings/$name-" "$work" "$seeds" >"$build/fuzz/$name.log" 2>&1
    rc=$?
    end=$(date +%s.%N)
    execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$build/fuzz/$name.log" | tail -1)
    printf '%-20s %s executions in %.1f s: %s\n' "$name" "${execs:-?}" "$(awk "BEGIN{print $end - $start}")" \
        "$([ $rc -eq 0 ] && echo ok || echo "FAILED (rc $rc, $build/fuzz/$name.log)")" >"$build/fuzz/$name.line"
    [ $rc -eq 0 ]
}
# FUZZ_JOBS harnesses at a time (default: one per core; each runs in one process), lines printed in name order
bins=()
for bin in "$build"/fuzz/fuzz_*; do
    [ -x "$bin" ] || continue
    bins+=("$bin")
    while [ "$(jobs -rp | wc -l)" -ge "$jobs" ]; do wait -n; done
    rm -f "$build/fuzz/$(basename "$bin").line"
    run_one "$bin" &
done
wait
for bin in "${bins[@]}"; do
    line="$build/fuzz/$(basename "$bin").line"
    if [ -f "$line" ]; then cat "$line"; else echo "$(basename "$bin"): no result"; fail=1; fi
    grep -q ': ok$' "$line" 2>/dev/null || fail=1
done
exit $fail
