#!/usr/bin/env bash
# Runs the accuracy part of many rows of the Long Range Arena table (docs/results/lra.md) one after another, for
# runs that outlast a session: each spec's run of one task goes through bench/lra_row.sh --no-speed, a spec
# whose row for that task is already in --out is skipped, and a run that was interrupted resumes from its
# last state (lra_row.sh keeps its clock). So the same command, run again after a stop, continues the queue.
# Two queues (say ListOps and Text) can run side by side, one thread each, if they share --work.
# usage: bench/lra_queue.sh --task listops|text --out ROWS.jsonl [lra_row.sh options ...] -- SPEC [SPEC ...]
set -euo pipefail
cd "$(dirname "$0")/.."
task=""; out=""; opts=()
while [ $# -gt 0 ]; do
    case $1 in
    --task) task=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    --) shift; break ;;
    *) opts+=("$1"); shift ;;
    esac
done
case $task in listops|text) ;; *) echo "lra_queue.sh: error: --task must be listops or text" >&2; exit 2 ;; esac
[ -n "$out" ] || { echo "lra_queue.sh: error: --out ROWS.jsonl is required" >&2; exit 2; }
[ $# -gt 0 ] || { echo "lra_queue.sh: error: no spec after --" >&2; exit 2; }
has_row() { # spec: is its accuracy row for this task in --out?
    [ -s "$out" ] && python3 -c '
import json, sys
for line in open(sys.argv[1]):
    r = json.loads(line) if line.startswith("{") else {}
    if r.get("part") == "accuracy" and r.get("name") == sys.argv[2] and r.get("task") == sys.argv[3]:
        sys.exit(0)
sys.exit(1)' "$out" "$1" "$task"
}
for spec in "$@"; do
    if has_row "$spec"; then echo "lra_queue.sh: $task $spec: already in $out" >&2; continue; fi
    echo "lra_queue.sh: $task $spec: $(date -u +%FT%TZ) start" >&2
    bench/lra_row.sh --attn "$spec" --task "$task" --no-speed --out "$out" "${opts[@]}" ||
        echo "lra_queue.sh: $task $spec: failed (exit $?); going on with the next spec" >&2
    echo "lra_queue.sh: $task $spec: $(date -u +%FT%TZ) end" >&2
done
