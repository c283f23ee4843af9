#!/usr/bin/python3
"""Validation curve of `longctx train --log FILE` runs as an SVG: valid bpc against minutes of training.

Reads the per-step JSON lines a training run writes with --log (the lines with "valid_bpc" are the
validation passes; "elapsed_s" is the wall time since the run started, resumed runs continuing their own
clock) and draws one line per file, by hand (no matplotlib), with a dashed horizontal line at --target
and a dotted vertical one at --minutes; --point MIN:BPC:LABEL marks one more measurement (e.g. the
final evaluation on the whole validation split, which the periodic passes may only sample). Prints, per file, the last periodic validation before --minutes,
the best one, and the final pass over the whole split as a Markdown table on stdout.

usage: bench/plot_curve.py OUT.svg LOG.jsonl[=LABEL] [LOG.jsonl[=LABEL] ...] [--target BPC] [--minutes M]
                           [--point MIN:BPC:LABEL ...]
"""
import json
import sys

COLORS = ["#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e"]


def load(path):
    """(minutes, valid bpc, step) of the periodic validation passes of a --log file, in step order, and those
    of the final passes over the whole split. Lines carry "valid_bytes" (what the pass read); in logs written
    before that field, the file's last validation line is taken as the final pass (a run that ends normally
    evaluates the whole split last) and the others as periodic."""
    rows = []
    with open(path) as f:
        for line in f:
            line = line.strip()
            if line.startswith("{"):
                r = json.loads(line)
                if "valid_bpc" in r:
                    rows.append(r)
    if not rows:
        sys.exit(f"plot_curve.py: error: {path}: no line with valid_bpc (was the run given --log?)")
    if all("valid_bytes" in r for r in rows):
        whole = max(r["valid_bytes"] for r in rows)  # with --eval-bytes 0 every pass reads it: one curve
        partial = any(r["valid_bytes"] < whole for r in rows)
        is_final = [partial and r["valid_bytes"] == whole for r in rows]
    else:
        is_final = [i == len(rows) - 1 for i in range(len(rows))]
    point = lambda r: (r["elapsed_s"] / 60.0, r["valid_bpc"], r["step"])
    return ([point(r) for r, fin in zip(rows, is_final) if not fin or len(rows) == 1],
            [point(r) for r, fin in zip(rows, is_final) if fin])


def main(argv):
    target, limit, files, marks = None, None, [], []
    i = 0
    while i < len(argv):
        if argv[i] == "--target":
            target = float(argv[i + 1])
            i += 2
        elif argv[i] == "--point":
            m, b, label = argv[i + 1].split(":", 2)
            marks.append((float(m), float(b), label))
            i += 2
        elif argv[i] == "--minutes":
            limit = float(argv[i + 1])
            i += 2
        else:
            files.append(argv[i])
            i += 1
    if len(files) < 2:
        sys.exit(__doc__)
    out, runs = files[0], []
    for spec in files[1:]:
        path, _, label = spec.partition("=")
        periodic, final = load(path)
        runs.append((label or path, periodic, final))
        marks += [(m, b, f"whole split, step {step}:") for m, b, step in final]

    xs = [p[0] for _, pts, _ in runs for p in pts] + ([limit] if limit else []) + [m[0] for m in marks]
    ys = [p[1] for _, pts, _ in runs for p in pts] + ([target] if target else []) + [m[1] for m in marks]
    x_max = max(xs) * 1.05
    y_lo, y_hi = min(ys) - 0.05, max(ys) + 0.05
    w, h, left, right, top, bottom = 720, 420, 70, 20, 30, 50
    pw, ph = w - left - right, h - top - bottom

    def px(x):
        return left + pw * x / x_max

    def py(y):
        return top + ph * (y_hi - y) / (y_hi - y_lo)

    svg = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{w}" height="{h}" font-family="sans-serif" font-size="12">',
           f'<rect width="{w}" height="{h}" fill="white"/>',
           f'<line x1="{left}" y1="{top + ph}" x2="{left + pw}" y2="{top + ph}" stroke="black"/>',
           f'<line x1="{left}" y1="{top}" x2="{left}" y2="{top + ph}" stroke="black"/>',
           f'<text x="{left + pw / 2}" y="{h - 10}" text-anchor="middle">minutes of training</text>',
           f'<text x="15" y="{top + ph / 2}" text-anchor="middle" transform="rotate(-90 15 {top + ph / 2})">'
           'validation bits per byte</text>']
    step = 10 if x_max > 30 else 5
    for t in range(0, int(x_max) + 1, step):
        svg.append(f'<line x1="{px(t):.1f}" y1="{top + ph}" x2="{px(t):.1f}" y2="{top + ph + 4}" stroke="black"/>')
        svg.append(f'<text x="{px(t):.1f}" y="{top + ph + 18}" text-anchor="middle">{t}</text>')
    y = round(y_lo, 1)
    while y <= y_hi:
        if y >= y_lo:
            svg.append(f'<line x1="{left - 4}" y1="{py(y):.1f}" x2="{left + pw}" y2="{py(y):.1f}" stroke="#ddd"/>')
            svg.append(f'<text x="{left - 8}" y="{py(y) + 4:.1f}" text-anchor="end">{y:.1f}</text>')
        y = round(y + 0.1, 1)
    if target is not None:
        svg.append(f'<line x1="{left}" y1="{py(target):.1f}" x2="{left + pw}" y2="{py(target):.1f}" '
                   'stroke="black" stroke-dasharray="6 4"/>')
        svg.append(f'<text x="{left + pw - 4}" y="{py(target) - 6:.1f}" text-anchor="end">target {target}</text>')
    if limit is not None:
        svg.append(f'<line x1="{px(limit):.1f}" y1="{top}" x2="{px(limit):.1f}" y2="{top + ph}" '
                   'stroke="black" stroke-dasharray="2 3"/>')
    print("| run | last periodic validation within the limit (minute, step, bpc) | best periodic validation | "
          "final passes over the whole split |")
    print("| --- | --- | --- | --- |")
    for k, (label, pts, final) in enumerate(runs):
        color = COLORS[k % len(COLORS)]
        path = " ".join(f"{px(x):.1f},{py(v):.1f}" for x, v, _ in pts)
        svg.append(f'<polyline points="{path}" fill="none" stroke="{color}" stroke-width="2"/>')
        for x, v, _ in pts:
            svg.append(f'<circle cx="{px(x):.1f}" cy="{py(v):.1f}" r="2.5" fill="{color}"/>')
        svg.append(f'<text x="{left + 10}" y="{top + 16 + 16 * k}" fill="{color}">{label}</text>')
        within = [p for p in pts if limit is None or p[0] <= limit]
        last = within[-1] if within else None
        best = min(pts, key=lambda p: p[1])
        fmt = lambda p: f"{p[0]:.1f}, {p[2]}, {p[1]:.4f}" if p else "none"
        print(f"| {label} | {fmt(last)} | {fmt(best)} | {'; '.join(fmt(p) for p in final) or 'none'} |")
    for x, v, label in marks:
        svg.append(f'<rect x="{px(x) - 4:.1f}" y="{py(v) - 4:.1f}" width="8" height="8" fill="black"/>')
        svg.append(f'<text x="{px(x) - 8:.1f}" y="{py(v) + 18:.1f}" text-anchor="end">{label} {v:.4f}</text>')
    svg.append("</svg>")
    with open(out, "w") as f:
        f.write("\n".join(svg) + "\n")


if __name__ == "__main__":
    main(sys.argv[1:])
