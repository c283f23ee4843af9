"""The Long Range Arena table of docs/results/lra.md from bench/lra_row.sh's JSON lines: per attention kind, test
accuracy on ListOps and Text (with steps, examples seen and wall time: the budget each run had), training
steps/s and peak memory at 1K, 2K, 3K, 4K tokens relative to full attention measured side by side, and the
published LRA rows (Tay et al. 2020, ../shared/REFERENCE.md) beside them. Plain python3.
Rows are grouped by the lines' "name"; with --by-spec they are grouped by the attention spec instead, and
of several lines for the same spec and task (or spec and length) the last one read wins: list the files
oldest first, and a rerun replaces the row it repeats (the final table of docs/results/lra.md is made this way).
usage: python3 bench/lra_table.py [--by-spec] ROWS.jsonl [MORE.jsonl ...]"""
import json
import sys

# LRA's published accuracy (ListOps, Text) and speed at 4K relative to full (TPU); None: not reported
PUBLISHED = {
    "Transformer": (36.37, 64.27, 1.0),
    "Longformer": (35.63, 62.85, None),
    "BigBird": (36.05, 64.02, 1.1),
    "Reformer": (37.27, 56.10, 0.8),
    "Linformer": (35.70, 53.94, 5.5),
    "Local Attention": (15.82, 52.98, 5.3),
    "Sparse Transformer": (17.07, 63.58, None),
}
# which published row a longctx kind is compared with (by the spec's first kind)
COUNTERPART = {"full": "Transformer", "window": "Longformer", "bigbird": "BigBird", "lsh": "Reformer",
               "linformer": "Linformer", "block": "Local Attention", "strided": "Sparse Transformer"}
LENS = (1024, 2048, 3072, 4096)


def kind_of(spec):
    """The spec's kind when it has one ('full', 'window', ...), 'block+strided' for the Sparse Transformer's
    mix, None for other mixes of head groups (no published counterpart)."""
    kinds = []
    for group in spec.split("+"):
        k = group.split(":")[0]
        kinds.append(k.split("x", 1)[1] if "x" in k and k.split("x", 1)[0].isdigit() else k)
    if len(set(kinds)) == 1:
        return kinds[0]
    return "strided" if sorted(set(kinds)) == ["block", "strided"] else None


def pct(x):
    return "-" if x is None else f"{100 * x:.2f}"


def main(paths, by_spec=False):
    rows = [json.loads(line) for p in paths for line in open(p) if line.strip().startswith("{")]
    if by_spec:  # one row per spec; later lines replace earlier ones (dicts below keep the last)
        rows = [dict(r, name=r["attn"]) for r in rows]
    names = list(dict.fromkeys(r["name"] for r in rows))
    acc = {(r["name"], r["task"]): r for r in rows if r.get("part") == "accuracy"}
    speed = {(r["name"], r["len"]): r for r in rows if r.get("part") == "speed"}
    print("| kind (spec) | ListOps | Text | budget: steps x batch, wall (ListOps / Text) | "
          "steps/s vs full: 1K / 2K / 3K / 4K | peak memory vs full: 1K / 2K / 3K / 4K | LRA row: ListOps / Text / 4K speed |")
    print("| --- | --- | --- | --- | --- | --- | --- |")
    for n in names:
        spec = next(r["attn"] for r in rows if r["name"] == n)
        lo, tx = acc.get((n, "listops")), acc.get((n, "text"))

        def budget(r):
            if not r:
                return "-"
            cut = ", cut at the time limit" if r.get("cut") else ""
            return f"{r['steps']} x {r['batch']} ({r['examples_seen']:,} ex.), {r['wall_s'] / 60:.0f} min{cut}"

        sp = [speed.get((n, L)) for L in LENS]
        ratio = " / ".join("-" if s is None else f"{s['speedup']:.2f}x" for s in sp)
        mem = " / ".join("-" if s is None else f"{s['memory_ratio']:.2f}x" for s in sp)
        pub = PUBLISHED.get(COUNTERPART.get(kind_of(spec), ""))
        pub_s = "-" if pub is None else (f"{COUNTERPART[kind_of(spec)]}: {pub[0]:.2f} / {pub[1]:.2f} / "
                                         + ("-" if pub[2] is None else f"{pub[2]}x"))
        label = f"`{spec}`" if by_spec else f"{n} (`{spec}`)"
        print(f"| {label} | {pct(lo and lo['test_accuracy'])} | {pct(tx and tx['test_accuracy'])} | "
              f"{budget(lo)} / {budget(tx)} | {ratio} | {mem} | {pub_s} |")
    absolute = [r for r in rows if r.get("part") == "speed"]
    if absolute:
        print()
        print("| kind | T | steps/s | full steps/s | peak RSS MB | full peak RSS MB |")
        print("| --- | --- | --- | --- | --- | --- |")
        for r in absolute:
            print(f"| {r['name']} | {r['len']} | {r['steps_per_s']:.3f} | {r['full_steps_per_s']:.3f} | "
                  f"{r['peak_rss_mb']:.0f} | {r['full_peak_rss_mb']:.0f} |")


if __name__ == "__main__":
    args = sys.argv[1:]
    by_spec = "--by-spec" in args
    args = [a for a in args if a != "--by-spec"]
    if not args:
        sys.exit(__doc__)
    main(args, by_spec)
