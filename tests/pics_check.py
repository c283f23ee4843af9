#!/usr/bin/env python3
"""Checks of the SVG figures `longctx plot` and `longctx attn-map` draw (tests/cli_pics_test.sh).

  pics_check.py plot FIG.svg LOG.jsonl [LOG2.jsonl ...] [--x step|time]
      the SVG parses; every panel's series map back (through the panel's data-* axis mapping) to the
      log's values, in order: loss, then each validation measure; x ticks are at least two distinct labels.
  pics_check.py window FIG.svg W
      the attention map parses; in every query row the cells with weight are exactly the keys t-W..t (the
      causal window kind: w keys before the query and itself).
"""
import json
import sys
import xml.etree.ElementTree as ET

NS = "{http://www.w3.org/2000/svg}"


def fail(msg):
    sys.exit("pics_check.py: " + msg)


def inverse(g, px, py):
    f = lambda k: float(g.get(k))
    x = f("data-x0") + (px - f("data-px0")) * (f("data-x1") - f("data-x0")) / (f("data-px1") - f("data-px0"))
    y = f("data-y0") + (py - f("data-py0")) * (f("data-y1") - f("data-y0")) / (f("data-py1") - f("data-py0"))
    # one pixel's worth of value, for the 2 decimals the coordinates are written with
    tol_x = abs(f("data-x1") - f("data-x0")) / abs(f("data-px1") - f("data-px0")) * 0.006
    tol_y = abs(f("data-y1") - f("data-y0")) / abs(f("data-py1") - f("data-py0")) * 0.006
    return x, y, tol_x, tol_y


def check_plot(svg, logs, xaxis):
    root = ET.parse(svg).getroot()
    panels = {g.get("data-metric"): g for g in root.iter(NS + "g") if g.get("class") == "panel"}
    if "loss" not in panels:
        fail("no loss panel")
    rows = [[json.loads(l) for l in open(p) if l.strip()] for p in logs]
    if xaxis == "time":
        top = max(r["elapsed_s"] for rs in rows for r in rs)
        unit = 1 if top < 180 else 60 if top < 3 * 3600 else 3600
    checked = 0
    for metric, g in panels.items():
        lines = {int(pl.get("data-log")): pl for pl in g.iter(NS + "polyline")}
        finals = {}
        for c in g.iter(NS + "circle"):
            if c.get("class") == "final":
                finals.setdefault(int(c.get("data-log")), []).append((float(c.get("cx")), float(c.get("cy"))))
        for i, rs in enumerate(rows):
            want = [r for r in rs if metric in r and r[metric] is not None]
            pts = [tuple(map(float, p.split(","))) for p in lines[i].get("points").split()] if i in lines else []
            pts += finals.get(i, [])
            if len(pts) != len(want):
                fail("%s: panel %s has %d points for log %d, the log has %d" % (svg, metric, len(pts), i, len(want)))
            got = sorted(inverse(g, px, py) for px, py in pts)
            exp = sorted(((r["step"] if xaxis == "step" else r["elapsed_s"] / unit), r[metric]) for r in want)
            for (x, y, tx, ty), (ex, ey) in zip(got, exp):
                if abs(x - ex) > tx or abs(y - ey) > ty:
                    fail("%s: panel %s: point (%g, %g) is not the log's (%g, %g)" % (svg, metric, x, y, ex, ey))
                checked += 1
        labels = [t.text for t in g.iter(NS + "text") if t.get("text-anchor") == "middle" and t.text]
        ticks = [t for t in labels if t.replace(".", "").replace("-", "").isdigit()]
        if len(set(ticks)) < 2:
            fail("%s: panel %s has x tick labels %s" % (svg, metric, ticks))
    print("pics_check.py: %s: %d points match the logs" % (svg, checked))


def check_window(svg, w):
    root = ET.parse(svg).getroot()
    g = next(g for g in root.iter(NS + "g") if g.get("id") == "map")
    n = int(g.get("data-queries"))
    seen = [set() for _ in range(n)]
    for r in g.iter(NS + "rect"):
        t, s0, s1 = int(r.get("data-t")), int(r.get("data-s0")), int(r.get("data-s1"))
        seen[t].update(range(s0, s1 + 1))
    for t in range(n):
        want = set(range(max(0, t - w), t + 1))
        if seen[t] != want:
            fail("%s: query %d has weight on keys %s, the window is %s" % (svg, t, sorted(seen[t]), sorted(want)))
    print("pics_check.py: %s: %d rows, each exactly its window" % (svg, n))


def main(a):
    if a[0] == "plot":
        xaxis = "step"
        if "--x" in a:
            i = a.index("--x")
            xaxis = a[i + 1]
            a = a[:i] + a[i + 2:]
        check_plot(a[1], a[2:], xaxis)
    elif a[0] == "window":
        check_window(a[1], int(a[2]))
    else:
        fail(__doc__)


if __name__ == "__main__":
    main(sys.argv[1:])
