#!/usr/bin/python3
"""Chart and summary of `longctx bench attn --json` lines (bench/attn_scaling.sh), in plain Python.

Draws an SVG by hand (no matplotlib) with two panels against sequence length (log2 x axis), one line
per kind: left, time per token of forward + backward in microseconds (log y axis); right, peak bytes per
token (linear y axis from 0). Then prints a Markdown summary table on stdout: per kind, time per token at
the shortest and the longest length and their ratio (the target is <= 1.25x from 2K to 64K), and the
spread of bytes per token (the target is within +-20% of the mean); and window vs full at the longest
length both have (the target is >= 10x). With --torch FILE (bench/attn_vs_pytorch.sh output) it also
prints the PyTorch comparison table (target >= 3x).

usage: bench/plot_attn.py [SCALING.jsonl] [OUT.svg] [--torch TORCH.jsonl]
       defaults: experiments/benchmarks/bench_attn_scaling.jsonl docs/figures/attn_scaling.svg
"""
import json
import math
import sys

COLORS = ["#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b", "#e377c2", "#17becf", "#7f7f7f"]


def load(path):
    rows = []
    with open(path) as f:
        for line in f:
            line = line.strip()
            if line.startswith("{"):
                r = json.loads(line)
                if "fwd_ms" in r and r.get("impl", "longctx") == "longctx":
                    rows.append(r)
    return rows


def by_kind(rows):
    kinds = {}
    for r in rows:
        kinds.setdefault(r["kind"], {})[r["len"]] = r
    return kinds


def us_per_token(r):
    return 1e3 * (r["fwd_ms"] + r["bwd_ms"]) / (r["len"] * r.get("batch", 1))


def bytes_per_token(r):
    return r["peak_bytes"] / (r["len"] * r.get("batch", 1))


def nice_log_ticks(lo, hi):
    ticks = []
    e = math.floor(math.log10(lo))
    while 10 ** e <= hi * 1.0001:
        for m in (1, 2, 5):
            v = m * 10 ** e
            if lo <= v <= hi:
                ticks.append(v)
        e += 1
    return ticks


def nice_linear_ticks(hi, n=5):
    raw = hi / n
    mag = 10 ** math.floor(math.log10(raw))
    step = next(m * mag for m in (1, 2, 2.5, 5, 10) if m * mag >= raw)
    return [i * step for i in range(int(hi / step) + 1)]


def fmt_len(n):
    return "%dK" % (n // 1024) if n % 1024 == 0 else str(n)


def fmt_num(v):
    if v >= 1e6:
        return "%gM" % (v / 1e6)
    if v >= 1e3:
        return "%gK" % (v / 1e3)
    return "%g" % v


def esc(s):
    return s.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def panel(out, x0, y0, w, h, kinds, value, ylog, title, ylabel, lens):
    """One chart in the rectangle (x0, y0, w, h) of plot area; value(row) gives y."""
    xs = [math.log2(n) for n in lens]
    xlo, xhi = min(xs) - 0.25, max(xs) + 0.25
    vals = [value(r) for k in kinds.values() for r in k.values()]
    if ylog:
        ylo, yhi = min(vals) / 1.3, max(vals) * 1.3
        ticks = nice_log_ticks(ylo, yhi)
        fy = lambda v: y0 + h - h * (math.log10(v) - math.log10(ylo)) / (math.log10(yhi) - math.log10(ylo))
    else:
        yhi = max(vals) * 1.15
        ticks = nice_linear_ticks(yhi)
        yhi = max(yhi, ticks[-1])
        fy = lambda v: y0 + h - h * v / yhi
    fx = lambda n: x0 + w * (math.log2(n) - xlo) / (xhi - xlo)
    out.append('<rect x="%.1f" y="%.1f" width="%.1f" height="%.1f" fill="none" stroke="#444"/>' % (x0, y0, w, h))
    for t in ticks:
        y = fy(t)
        out.append('<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="#ddd"/>' % (x0, y, x0 + w, y))
        out.append('<text x="%.1f" y="%.1f" text-anchor="end" font-size="11">%s</text>' % (x0 - 5, y + 4, fmt_num(t)))
    for n in lens:
        x = fx(n)
        out.append('<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="#eee"/>' % (x, y0, x, y0 + h))
        out.append('<text x="%.1f" y="%.1f" text-anchor="middle" font-size="11">%s</text>' % (x, y0 + h + 16, fmt_len(n)))
    out.append('<text x="%.1f" y="%.1f" text-anchor="middle" font-size="13">sequence length (tokens, log scale)</text>'
               % (x0 + w / 2, y0 + h + 36))
    out.append('<text x="%.1f" y="%.1f" text-anchor="middle" font-size="13" transform="rotate(-90 %.1f %.1f)">%s</text>'
               % (x0 - 48, y0 + h / 2, x0 - 48, y0 + h / 2, esc(ylabel)))
    out.append('<text x="%.1f" y="%.1f" text-anchor="middle" font-size="14" font-weight="bold">%s</text>'
               % (x0 + w / 2, y0 - 10, esc(title)))
    for i, (kind, pts) in enumerate(kinds.items()):
        color = COLORS[i % len(COLORS)]
        coords = [(fx(n), fy(value(pts[n]))) for n in sorted(pts)]
        out.append('<polyline fill="none" stroke="%s" stroke-width="2" points="%s"/>'
                   % (color, " ".join("%.1f,%.1f" % c for c in coords)))
        for x, y in coords:
            out.append('<circle cx="%.1f" cy="%.1f" r="3" fill="%s"/>' % (x, y, color))


def draw(kinds, path):
    lens = sorted({n for k in kinds.values() for n in k})
    W, H = 1000, 470
    out = ['<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" '
           'font-family="sans-serif">' % (W, H, W, H),
           '<rect width="100%" height="100%" fill="white"/>']
    any_row = next(iter(next(iter(kinds.values())).values()))
    out.append('<text x="%d" y="22" text-anchor="middle" font-size="15">longctx attention kinds, forward + backward '
               '(B=%d, %d heads x %d, %s, %d threads)</text>'
               % (W // 2, any_row.get("batch", 1), any_row["heads"], any_row["head_dim"],
                  "causal" if any_row.get("causal", 1) else "bidirectional", any_row["threads"]))
    panel(out, 80, 60, 360, 300, kinds, us_per_token, True, "time per token", "microseconds per token (log)", lens)
    panel(out, 570, 60, 360, 300, kinds, bytes_per_token, False, "peak memory per token", "bytes per token", lens)
    # legend below the panels
    lx, ly = 80, 425
    for i, kind in enumerate(kinds):
        color = COLORS[i % len(COLORS)]
        x = lx + (i % 4) * 225
        y = ly + (i // 4) * 20
        out.append('<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="%s" stroke-width="3"/>' % (x, y, x + 22, y, color))
        out.append('<text x="%d" y="%d" font-size="12">%s</text>' % (x + 28, y + 4, esc(kind)))
    out.append("</svg>")
    with open(path, "w") as f:
        f.write("\n".join(out) + "\n")


def summary(kinds):
    print("| kind | lengths | us/token at first | us/token at last | last / first (target <= 1.25) "
          "| bytes/token min - max | spread (target +-20%) |")
    print("| --- | --- | --- | --- | --- | --- | --- |")
    for kind, pts in kinds.items():
        ns = sorted(pts)
        a, b = us_per_token(pts[ns[0]]), us_per_token(pts[ns[-1]])
        bpt = [bytes_per_token(pts[n]) for n in ns]
        mean = sum(bpt) / len(bpt)
        spread = max(abs(x - mean) for x in bpt) / mean
        # full and strided cost O(T) per token by design (every key / T/s keys per query): no flat target
        linear_cost = kind.split(":")[0].split("x")[-1] in ("full", "strided")
        verdict = "(O(T) per token by design)" if linear_cost else "ok" if b / a <= 1.25 else "**missed**"
        print("| %s | %s-%s | %.2f | %.2f | %.2fx %s | %s - %s | +-%.1f%% %s |"
              % (kind, fmt_len(ns[0]), fmt_len(ns[-1]), a, b, b / a, verdict,
                 "{:,.0f}".format(min(bpt)), "{:,.0f}".format(max(bpt)), 100 * spread,
                 "ok" if spread <= 0.20 else "**missed**"))
    windows = [k for k in kinds if k.startswith("window") and "global" not in k]
    if "full" in kinds and windows:
        for wk in windows:
            common = sorted(set(kinds[wk]) & set(kinds["full"]))
            if common:
                n = common[-1]
                f, w = kinds["full"][n], kinds[wk][n]
                ratio = (f["fwd_ms"] + f["bwd_ms"]) / (w["fwd_ms"] + w["bwd_ms"])
                print("\n%s vs full at %s: %.1f ms vs %.1f ms (fwd + bwd): %.1fx faster (target >= 10x: %s)"
                      % (wk, fmt_len(n), w["fwd_ms"] + w["bwd_ms"], f["fwd_ms"] + f["bwd_ms"], ratio,
                         "ok" if ratio >= 10 else "missed"))


def torch_table(path):
    rows = [json.loads(l) for l in open(path) if l.strip().startswith("{")]
    print("\n| kind | T | longctx fwd / bwd ms | PyTorch fwd / bwd ms | speed-up (target >= 3x) "
          "| longctx peak MB | PyTorch peak MB |")
    print("| --- | --- | --- | --- | --- | --- | --- |")
    get = {(r["impl"], r["kind"], r["len"]): r for r in rows if "impl" in r and "len" in r}
    keys = sorted({(k, n) for (_, k, n) in get}, key=lambda x: (x[0], x[1]))
    for kind, n in keys:
        c, p = get.get(("longctx", kind, n)), get.get(("pytorch", kind, n))
        cs = "%.1f / %.1f" % (c["fwd_ms"], c["bwd_ms"]) if c and "fwd_ms" in c else "not available"
        ps = "%.1f / %.1f" % (p["fwd_ms"], p["bwd_ms"]) if p and "fwd_ms" in p else "skipped"
        ratio = "-"
        if c and p and "fwd_ms" in c and "fwd_ms" in p:
            r = (p["fwd_ms"] + p["bwd_ms"]) / (c["fwd_ms"] + c["bwd_ms"])
            ratio = "%.1fx %s" % (r, "ok" if r >= 3 else "**missed**")
        cm = "%.0f" % (c["peak_bytes"] / 1e6) if c and "peak_bytes" in c else "-"
        pm = "%.0f" % (p["peak_bytes"] / 1e6) if p and "peak_bytes" in p else "-"
        print("| %s | %s | %s | %s | %s | %s | %s |" % (kind, fmt_len(n), cs, ps, ratio, cm, pm))


def main(argv):
    torch_path = None
    if "--torch" in argv:
        i = argv.index("--torch")
        torch_path = argv[i + 1]
        argv = argv[:i] + argv[i + 2:]
    src = argv[0] if argv else "experiments/benchmarks/bench_attn_scaling.jsonl"
    dst = argv[1] if len(argv) > 1 else "docs/figures/attn_scaling.svg"
    kinds = by_kind(load(src))
    if not kinds:
        sys.exit("plot_attn.py: no bench attn lines in %s" % src)
    draw(kinds, dst)
    print("wrote %s" % dst, file=sys.stderr)
    summary(kinds)
    if torch_path:
        torch_table(torch_path)


if __name__ == "__main__":
    main(sys.argv[1:])
