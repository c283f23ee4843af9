#!/usr/bin/env bash
# Where a training step's time goes (issue 13, item 2): `perf record` of `longctx bench train` (default: the
# vanilla model, 1 thread, 20 timed steps), then the samples grouped by symbol into products (the BLAS or
# built-in gemm kernels; their packing copies apart), attention (the tiled kernels), elementwise passes
# (GELU, bias, layer norm, softmax cross-entropy, embeddings, residual adds, memset/memmove), the optimizer
# (AdamW, gradient norm) and the rest. Shares of CPU samples, so a busy machine changes the absolute step
# time but hardly the split. Needs perf (Debian: linux-perf). Extra arguments go to `bench train`.
# usage: bench/profile_step.sh [--bin PATH] [bench-train flags...]
set -euo pipefail
cd "$(dirname "$0")/.."
bin=./build/release/longctx
if [ "${1:-}" = --bin ]; then bin=$2; shift 2; fi
[ -x "$bin" ] || { echo "profile_step.sh: error: $bin is not an executable (run make)" >&2; exit 2; }
command -v perf >/dev/null || { echo "profile_step.sh: error: perf is not installed (apt-get install linux-perf)" >&2; exit 2; }
[ $# -gt 0 ] || set -- --model vanilla --threads 1 --steps 20
data=$(mktemp); trap 'rm -f "$data"' EXIT
perf record -q -F 1999 -o "$data" "$bin" bench train "$@" >&2
perf report -i "$data" --no-children --sort dso,symbol --stdio 2>/dev/null | python3 -c '
import re, sys
groups = ["products", "products: packing", "attention", "elementwise", "optimizer", "other"]
share = dict.fromkeys(groups, 0.0)
top = {g: [] for g in groups}
for line in sys.stdin:
    m = re.match(r"\s*([0-9.]+)%\s+(\S+)\s+\[.\]\s+(\S+)", line)
    if not m:
        continue
    p, dso, sym = float(m.group(1)), m.group(2), m.group(3)
    if "blas" in dso or sym.startswith("lc_gemm") or "micro_kernel" in sym or "pack_" in sym or sym.startswith("lc_bf16x"):
        g = "products: packing" if "copy" in sym or "pack_" in sym else "products"
    elif re.search(r"query_tile|key_tile|head_keys|full_|attn|window|bigbird|lsh|linformer|routing", sym):
        g = "attention"
    elif re.search(r"adamw|sum_squares|lc_scale", sym):
        g = "optimizer"
    elif re.search(r"gelu|relu|bias|xent|layernorm|row_sum|embedding|lc_add|memset|memmove|memcpy|dropout", sym):
        g = "elementwise"
    else:
        g = "other"
    share[g] += p
    if len(top[g]) < 3:
        top[g].append(f"{sym} {p:.1f}%")
print("| part of the step | share of CPU samples | largest symbols |")
print("| --- | --- | --- |")
for g in groups:
    names = ", ".join(top[g])
    print(f"| {g} | {share[g]:.1f}% | {names} |")
'
