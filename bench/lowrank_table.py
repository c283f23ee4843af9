"""Prints the table of bench/lowrank_scaling.sh: per kind and length, forward + backward time per token,
attention memory per token, and the speed-up and memory saving over full attention at the same length.
usage: bench/lowrank_table.py experiments/benchmarks/bench_lowrank.jsonl"""
import json
import sys

rows = [json.loads(line) for line in open(sys.argv[1]) if line.strip().startswith("{")]
full = {r["len"]: r for r in rows if r["kind"] == "full"}
print("| kind | T | fwd + bwd ms | us per token | bytes per token | speed-up over full | memory saving |")
print("| --- | --- | --- | --- | --- | --- | --- |")
for r in rows:
    t = r["fwd_ms"] + r["bwd_ms"]
    f = full.get(r["len"])
    speed = f"{(f['fwd_ms'] + f['bwd_ms']) / t:.1f}x" if f and r["kind"] != "full" else "-"
    mem = f"{f['peak_bytes'] / r['peak_bytes']:.1f}x" if f and r["kind"] != "full" else "-"
    print(f"| {r['kind']} | {r['len']} | {t:,.1f} | {1e3 * t / r['len']:.2f} | {r['peak_bytes'] / r['len']:,.0f} "
          f"| {speed} | {mem} |")
