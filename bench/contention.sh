#!/usr/bin/env bash
# Training on a busy machine (issue 13, item 1): the default training step (`longctx bench train`, the
# Transformer-XL preset) at 1 and 2 threads, on a quiet machine and while a competing 2-thread process
# runs, side by side: each round runs every configuration once, quiet ones first, and the table gives the
# medians over rounds of each run's median step. Reported per configuration: wall ms per step, CPU ms per
# step (all threads: a thread that spins at a barrier burns CPU without progress), and the CPU ratio to the
# quiet run of the same thread count. The targets: busy, 2 threads at least as fast as 1 thread, and CPU
# per step within 1.3x of quiet.
# The competitor (--competitor): `spin`, two busy loops that are always runnable (the harshest and most
# reproducible load), or `longctx`, a second `longctx bench train --threads 2` (two trainings sharing the
# machine). Extra flags after -- go to every measured `bench train` (e.g. -- --model vanilla).
# usage: bench/contention.sh [--bin PATH] [--rounds R] [--steps N] [--competitor spin|longctx]
#        [--json FILE.jsonl] [-- bench-train flags...]
set -euo pipefail
cd "$(dirname "$0")/.."
bin=./build/release/longctx; rounds=3; steps=10; competitor=spin; json=""; extra=()
while [ $# -gt 0 ]; do
    case $1 in
    --bin) bin=$2; shift 2 ;;
    --rounds) rounds=$2; shift 2 ;;
    --steps) steps=$2; shift 2 ;;
    --competitor) competitor=$2; shift 2 ;;
    --json) json=$2; shift 2 ;;
    --) shift; extra=("$@"); break ;;
    *) echo "contention.sh: error: unknown argument '$1' (see the usage at the top of bench/contention.sh)" >&2; exit 2 ;;
    esac
done
[ -x "$bin" ] || { echo "contention.sh: error: --bin $bin is not an executable (run make)" >&2; exit 2; }
case $competitor in spin|longctx) ;; *) echo "contention.sh: error: --competitor must be spin or longctx" >&2; exit 2 ;; esac
tmp=$(mktemp -d)
comp_pids=()
stop_competitor() {
    [ ${#comp_pids[@]} -eq 0 ] || { kill "${comp_pids[@]}" 2>/dev/null || true; wait "${comp_pids[@]}" 2>/dev/null || true; }
    comp_pids=()
}
trap 'stop_competitor; rm -rf "$tmp"' EXIT
start_competitor() {
    if [ "$competitor" = spin ]; then
        for _ in 1 2; do bash -c 'while :; do :; done' & comp_pids+=($!); done
    else
        "$bin" bench train --threads 2 --steps 100000 --warmup 0 >/dev/null 2>&1 & comp_pids+=($!)
    fi
    sleep 2 # let it reach its steady state
}
measure() { # scenario threads round -> appends "scenario threads wall_ms cpu_ms" to $tmp/runs
    local line
    line=$("$bin" bench train --threads "$2" --steps "$steps" --json "${extra[@]}" | tail -1)
    python3 -c 'import json,sys; d=json.loads(sys.argv[1]); print(sys.argv[2], sys.argv[3], d["ms_per_step_median"], d["cpu_ms_per_step_median"])' \
        "$line" "$1" "$2" >>"$tmp/runs"
    [ -z "$json" ] || python3 -c 'import json,sys; d=json.loads(sys.argv[1]); d.update(bench="contention", scenario=sys.argv[2], competitor=sys.argv[3], round=int(sys.argv[4])); print(json.dumps(d, separators=(",",":")))' \
        "$line" "$1" "$competitor" "$3" >>"$json"
}
for r in $(seq "$rounds"); do
    for t in 1 2; do measure quiet "$t" "$r"; done
    start_competitor
    for t in 1 2; do measure busy "$t" "$r"; done
    stop_competitor
    echo "contention.sh: round $r of $rounds done" >&2
done
python3 - "$tmp/runs" "$competitor" "$steps" "$rounds" <<'EOF'
import statistics, sys
runs = [l.split() for l in open(sys.argv[1])]
med = {}
for scen in ("quiet", "busy"):
    for t in ("1", "2"):
        rs = [r for r in runs if r[0] == scen and r[1] == t]
        med[scen, t] = (statistics.median(float(r[2]) for r in rs), statistics.median(float(r[3]) for r in rs))
print(f"bench train: medians of {sys.argv[4]} rounds, each the median of {sys.argv[3]} steps; competitor: {sys.argv[2]} (2 threads)")
print("| machine | threads | ms/step | CPU ms/step | CPU vs quiet |")
print("| --- | --- | --- | --- | --- |")
for scen in ("quiet", "busy"):
    for t in ("1", "2"):
        w, c = med[scen, t]
        print(f"| {scen} | {t} | {w:.1f} | {c:.1f} | {c / med['quiet', t][1]:.2f}x |")
b1, b2 = med["busy", "1"][0], med["busy", "2"][0]
print(f"busy: 2 threads take {b2 / b1:.2f}x the time of 1 thread (target <= 1); "
      f"CPU per step busy / quiet at 2 threads {med['busy', '2'][1] / med['quiet', '2'][1]:.2f}x (target <= 1.3)")
EOF
