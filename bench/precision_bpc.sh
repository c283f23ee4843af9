#!/usr/bin/env bash
# Does training with bf16 products reach the validation bpc of fp32 training? Trains the main job
# (`longctx train`, the small Transformer-XL on Tiny Shakespeare, or whatever training flags follow --)
# once per precision and seed, and prints one JSON line per run and a summary: each seed's bf16 - fp32
# difference and, with two seeds or more, the fp32 runs' own spread across seeds (the noise a
# difference should be read against). Issue 13's bar: |bf16 - fp32| <= 0.02.
#
#   bench/precision_bpc.sh [--bin ./longctx] [--seeds 1337,1338] [--threads 1] [--jobs 2] [--out DIR] [-- TRAIN FLAGS]
#
# --jobs N runs N trainings at a time (each with --threads): on a 2-core machine, --threads 1 --jobs 2.
# Logs and checkpoints go to --out (default a temporary directory, removed at the end).
set -euo pipefail

bin=./longctx seeds=1337 threads=1 jobs=1 out=""
while [ $# -gt 0 ]; do
    case "$1" in
        --bin) bin=$2; shift 2 ;;
        --seeds) seeds=$2; shift 2 ;;
        --threads) threads=$2; shift 2 ;;
        --jobs) jobs=$2; shift 2 ;;
        --out) out=$2; shift 2 ;;
        --) shift; break ;;
        -h|--help) sed -n '2,11p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
        *) echo "precision_bpc.sh: unknown flag $1 (see --help)" >&2; exit 2 ;;
    esac
done
[ -x "$bin" ] || { echo "precision_bpc.sh: --bin $bin is not an executable (run make first)" >&2; exit 2; }
keep=1
if [ -z "$out" ]; then out=$(mktemp -d /tmp/lc_precision_XXXXXX); keep=0; fi
mkdir -p "$out"

pids=()
for seed in ${seeds//,/ }; do
    for prec in fp32 bf16; do
        name="$out/$prec-$seed"
        (
            start=$(date +%s.%N)
            if "$bin" train --precision "$prec" --seed "$seed" --threads "$threads" --json --out "$name.ckpt" "$@" \
                >"$name.stdout" 2>"$name.log"; then
                end=$(date +%s.%N)
                line=$(tail -n 1 "$name.stdout")
                echo "{\"precision\":\"$prec\",\"seed\":$seed,\"threads\":$threads,\"wall_s\":$(awk "BEGIN { printf \"%.1f\", $end - $start }"),\"summary\":$line}" \
                    >"$name.json"
            else
                echo "precision_bpc.sh: $prec seed $seed failed; see $name.log" >&2
            fi
        ) &
        pids+=($!)
        while [ "$(jobs -rp | wc -l)" -ge "$jobs" ]; do sleep 1; done
    done
done
wait
cat "$out"/*.json
/usr/bin/env python3 - "$out" <<'EOF'
import glob, json, statistics, sys
rows = [json.load(open(p)) for p in sorted(glob.glob(sys.argv[1] + "/*.json"))]
bpc = {(r["precision"], r["seed"]): r["summary"]["valid_bpc"] for r in rows}
seeds = sorted({s for _, s in bpc})
for s in seeds:
    if ("fp32", s) in bpc and ("bf16", s) in bpc:
        print("seed %d: valid bpc fp32 %.4f, bf16 %.4f, bf16 - fp32 %+.4f" % (s, bpc["fp32", s], bpc["bf16", s],
                                                                        bpc["bf16", s] - bpc["fp32", s]))
fp = [bpc["fp32", s] for s in seeds if ("fp32", s) in bpc]
bf = [bpc["bf16", s] for s in seeds if ("bf16", s) in bpc]
if len(fp) > 1:
    print("fp32 across %d seeds: %.4f to %.4f (spread %.4f); bf16 mean - fp32 mean %+.4f" %
          (len(fp), min(fp), max(fp), max(fp) - min(fp), statistics.mean(bf) - statistics.mean(fp)))
EOF
[ "$keep" = 1 ] || rm -rf "$out"
