#!/usr/bin/env bash
# One row of the Long Range Arena table of docs/results/lra.md for one attention spec (issue 11, item 6): the same
# classifier shape and budget for every kind. Prints one JSON line per measurement (to stdout and --out):
#  - "part":"accuracy": `train --task classify` on ListOps (words, --max-len 2000) and/or Text (byte-level
#    IMDB, --max-len 4000) for --steps steps, stopped by SIGINT if it passes --minutes (then "cut":true),
#    then `eval --json` of the best checkpoint (by validation accuracy) on the test split: test accuracy,
#    best validation accuracy, steps, examples seen, wall time, peak RSS.
#    With --budget-minutes M instead of --steps, every kind gets the same time, not the same steps: a
#    calibration run of --calib-steps steps (64: one chunk of length-sorted batches, so a fair sample of the
#    lengths) times the kind on the task's real data, and the run gets the steps that fit in M minutes with
#    its validation passes (10 of them, every steps/10), a multiple of 100; --minutes defaults to 1.15 M as
#    the backstop. The steps are kept in WORK/TASK-NAME.budget until the row ends, so a resumed run keeps
#    them. --calibrate-only writes that file and stops (no training, no speed part): calibrate every kind
#    one at a time on an idle machine, then run the rows with --minutes large enough that load cannot cut
#    them, and they train to the steps an idle machine fits in the budget.
#  - "part":"speed": training steps/s and peak RSS (/usr/bin/time) of the same shape on synthetic byte
#    examples of exactly 1K, 2K, 3K, 4K tokens, for the spec and for full attention side by side (one run,
#    alternating spec / full --speed-repeats times per length; medians), with the ratios spec/full.
# bench/lra_table.py turns the lines into the table. Data: ListOps splits generated into --work by
# `longctx listops` (seeds 1, 2, 3; --n sets the training size, default 96000); IMDB from data/imdb.
# usage: bench/lra_row.sh --attn SPEC [--name NAME] [--task listops|text|both|none] [--speed|--no-speed]
#        [--steps N | --budget-minutes M [--calib-steps N] [--calibrate-only]] [--minutes M] [--n N] [--valid-n N] [--batch B] [--eval-every N] [--work DIR]
#        [--speed-steps N] [--speed-batch B] [--speed-repeats R] [--out FILE.jsonl] [--bin PATH] [--threads T] [-- extra train flags]
set -euo pipefail
cd "$(dirname "$0")/.."
attn=""; name=""; task=both; speed=1; steps=800; minutes=""; budget=""; calib_steps=64; calib_only=0; n=96000; valid_n=500; batch=16; eval_every=200
work=${TMPDIR:-/tmp}/longctx_lra; out=""; bin=./longctx; threads=0; speed_steps=3; speed_batch=4; speed_repeats=3; extra=()
# the shape every row shares (experiments/lra-budgets/README.md, "The table's tooling"): change it for every kind or for none
shape=(--layers 2 --dim 64 --heads 4 --ffn 128 --dropout 0.1 --lr 0.001 --warmup 100 --weight-decay 0.01)
while [ $# -gt 0 ]; do
    case $1 in
    --attn) attn=$2; shift 2 ;;
    --name) name=$2; shift 2 ;;
    --task) task=$2; shift 2 ;;
    --speed) speed=1; shift ;;
    --no-speed) speed=0; shift ;;
    --steps) steps=$2; shift 2 ;;
    --minutes) minutes=$2; shift 2 ;;
    --budget-minutes) budget=$2; shift 2 ;;
    --calib-steps) calib_steps=$2; shift 2 ;;
    --calibrate-only) calib_only=1; speed=0; shift ;;
    --n) n=$2; shift 2 ;;
    --valid-n) valid_n=$2; shift 2 ;;
    --batch) batch=$2; shift 2 ;;
    --eval-every) eval_every=$2; shift 2 ;;
    --work) work=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    --bin) bin=$2; shift 2 ;;
    --threads) threads=$2; shift 2 ;;
    --speed-steps) speed_steps=$2; shift 2 ;;
    --speed-batch) speed_batch=$2; shift 2 ;;
    --speed-repeats) speed_repeats=$2; shift 2 ;;
    --) shift; extra=("$@"); break ;;
    *) echo "lra_row.sh: error: unknown argument '$1' (see the usage at the top of bench/lra_row.sh)" >&2; exit 2 ;;
    esac
done
[ -n "$attn" ] || { echo "lra_row.sh: error: --attn SPEC is required" >&2; exit 2; }
case $task in listops|text|both|none) ;; *) echo "lra_row.sh: error: --task must be listops, text, both or none" >&2; exit 2 ;; esac
[ -x "$bin" ] || { echo "lra_row.sh: error: --bin $bin is not an executable (run make)" >&2; exit 2; }
[ -n "$name" ] || name=$attn
[ "$calib_only" = 0 ] || [ -n "$budget" ] || { echo "lra_row.sh: error: --calibrate-only needs --budget-minutes" >&2; exit 2; }
if [ -n "$minutes" ]; then :; elif [ -n "$budget" ]; then minutes=$(( (budget * 115 + 99) / 100 )); else minutes=60; fi
mkdir -p "$work"
tag=$(printf '%s' "$name" | tr -c 'A-Za-z0-9_.=-' '_')
emit() { echo "$1"; [ -z "$out" ] || echo "$1" >>"$out"; }
json_str() { python3 -c 'import json,sys; print(json.dumps(sys.argv[1]))' "$1"; }
# the value of key $2 in the JSON line $1 (null when absent)
jget() { python3 -c 'import json,sys; print(json.dumps(json.loads(sys.argv[1]).get(sys.argv[2])))' "$1" "$2"; }
count_examples() { python3 -c 'import gzip,sys; f=sys.argv[1]; g=open(f,"rb").read(2)==b"\x1f\x8b"; print(sum(1 for _ in (gzip.open if g else open)(f,"rb")) - 1)' "$1"; }
peak_kb() { sed -n 's/^\s*Maximum resident set size (kbytes): //p' "$1"; }
common=(--attn "$attn" "${shape[@]}" --threads "$threads")

# ListOps splits (rewritten only when missing; the training split's size is part of its name)
listops_data() {
    [ -s "$work/listops_train_$n.tsv" ] || "$bin" listops --n "$n" --seed 1 --out "$work/listops_train_$n.tsv" >&2
    [ -s "$work/listops_test.tsv" ] || "$bin" listops --n 2000 --seed 3 --out "$work/listops_test.tsv" >&2
    [ -s "$work/listops_val.tsv" ] || "$bin" listops --n 2000 --seed 2 --out "$work/listops_val.tsv" >&2
}
# N examples of a labelled file spread evenly over it (every k-th, k = examples / N; header kept): the
# periodic validation set. Not the first N: data/imdb's files are sorted by label, so the first 500
# validation reviews are all negative.
spread_examples() {
    local total; total=$(count_examples "$1")
    if [[ $1 == *.gz ]]; then zcat "$1"; else cat "$1"; fi |
        awk -v n="$2" -v k=$(( total / $2 > 0 ? total / $2 : 1 )) 'NR == 1 { print; next } (NR - 2) % k == 0 && c < n { print; c++ }' >"$3"
}

# metadata of a safetensors file: the values of the given keys, space-separated ("-1" when absent)
last_meta() { python3 -c 'import json,struct,sys; f=open(sys.argv[1],"rb"); n=struct.unpack("<Q",f.read(8))[0]; m=json.loads(f.read(n))["__metadata__"]; print(*(m.get(k,"-1") for k in sys.argv[2:]))' "$@"; }
last_step() { last_meta "$1" step; }

accuracy_run() { # task train valid test max_len tokens-flags...
    local t=$1 train=$2 valid=$3 test=$4 max_len=$5; shift 5
    local ck="$work/$t-$tag.safetensors" log="$work/$t-$tag.log" tv="$work/$t-$tag.time"
    local vsub="$work/${t}_valid_spread_$valid_n.tsv" clock="$work/$t-$tag.clock"
    [ -s "$vsub" ] || spread_examples "$valid" "$valid_n" "$vsub"
    local budget_file="$work/$t-$tag.budget" calib_s=0 s_per_step=0
    if [ -n "$budget" ]; then # the same minutes for every kind: the steps that fit, from a calibration
        # run made before the clock starts (a resumed run reads the steps it was given)
        if [ "$calib_only" = 1 ] || ! [ -s "$budget_file" ]; then
            local cl="$work/calib-$t-$tag.log" cs
            "$bin" train --task classify --data "$train" --valid "$vsub" --max-len "$max_len" "$@" "${common[@]}" \
                --batch "$batch" --steps "$calib_steps" --warmup 0 --eval-every 0 --out "$work/calib-$t-$tag.safetensors" \
                --json "${extra[@]}" >"$cl" 2>"$cl.err" ||
                { echo "lra_row.sh: error: calibration of $t failed: $(tail -1 "$cl.err")" >&2; return 1; }
            cs=$(grep '^{' "$cl" | tail -1)
            # steps * s + 11 validation passes of valid_n / batch forward-only batches (about a third of a step)
            python3 -c 'import json,sys; s=json.loads(sys.argv[1]); t=s["seconds"]/s["run_steps"]; b,v,n=map(int,sys.argv[2:5])
n_steps=int((b*60/t - 11*v/(3*n))//100*100); n_steps=max(n_steps,100); print(n_steps, n_steps//10, round(t,4), s["seconds"])' \
                "$cs" "$budget" "$valid_n" "$batch" >"$budget_file"
            rm -f "$work/calib-$t-$tag.safetensors" "$work/calib-$t-$tag.safetensors.last"
        fi
        read -r steps eval_every s_per_step calib_s <"$budget_file"
        echo "lra_row.sh: $t of $name: $s_per_step s per step -> $steps steps in $budget minutes" >&2
        [ "$calib_only" = 0 ] || return 0
    fi
    # A run interrupted before it ended (the session stopped, the machine rebooted) resumes from its last
    # state (saved every 5 minutes), with the time it had already spent counted against --minutes: the
    # clock file holds the seconds of earlier attempts and the start of the current one; an attempt counts
    # up to its last save (its unsaved steps are redone). Without a clock file the run starts afresh.
    local before=0 now rc=0 cut=false resume=() flags
    now=$(date +%s)
    if [ -s "$clock" ] && [ -s "$ck.last" ]; then
        local acc start; read -r acc start <"$clock"
        before=$((acc + $(stat -c %Y "$ck.last") - start))
        resume=(--resume "$ck.last")
        echo "lra_row.sh: resuming $t of $name from $ck.last ($before s spent before)" >&2
    else
        rm -f "$ck" "$ck.last"
        : >"$log"; : >"$log.err"
    fi
    echo "$before $now" >"$clock"
    local left=$((minutes * 60 - before))
    [ "$left" -gt 0 ] || left=1
    if [ ${#resume[@]} -gt 0 ]; then # the checkpoint fixes the shape, the data flags and the optimizer
        flags=("${resume[@]}" --threads "$threads")
    else
        flags=(--max-len "$max_len" "$@" "${common[@]}" --batch "$batch")
    fi
    local t0 done_before=-1
    t0=$(date +%s.%N)
    [ ${#resume[@]} -eq 0 ] || done_before=$(last_step "$ck.last")
    if [ "$done_before" -ge "$steps" ] || [ $((minutes * 60 - before)) -le 0 ]; then
        [ "$done_before" -ge "$steps" ] || cut=true # the budget was spent before the interruption
        [ -s "$tv" ] || echo "Maximum resident set size (kbytes): 0" >"$tv"
    else /usr/bin/time -v -o "$tv" timeout --signal=INT --kill-after=120 "$left" \
        "$bin" train --task classify --data "$train" --valid "$vsub" "${flags[@]}" \
        --steps "$steps" --eval-every "$eval_every" --save-every-min 5 --out "$ck" --json "${extra[@]}" \
        >>"$log" 2>>"$log.err" || rc=$?
    fi
    local wall; wall=$(python3 -c "import time; print(round(time.time() - $t0 + $before, 1))")
    case $rc in 0) ;; 124|130) cut=true ;; *) echo "lra_row.sh: error: training $t failed (exit $rc): $(tail -1 "$log.err")" >&2; return 1 ;; esac
    # training is over: if scoring the test split is interrupted, the rerun must count the training time
    # only (its clock: the seconds spent, and a start no later than the last state's time)
    if [ -s "$ck.last" ]; then touch "$ck.last"; echo "${wall%.*} $(stat -c %Y "$ck.last")" >"$clock"; fi
    local summary done_steps best_valid
    summary=$(tail -1 "$log" | grep '^{' || true)
    # a cut run prints no summary: the step and the best so far are in its last state
    if [ -z "$summary" ]; then
        done_steps=$(last_meta "$ck.last" step best.accuracy)
        best_valid=${done_steps#* }; done_steps=${done_steps% *}
    else
        done_steps=$(jget "$summary" steps); best_valid=$(jget "$summary" valid_accuracy)
    fi
    local which=$ck; [ -s "$ck" ] || which=$ck.last # no validation pass yet: the last state
    local ev; ev=$("$bin" eval --ckpt "$which" --task classify --data "$test" --batch 8 --threads "$threads" --json | tail -1)
    emit "{\"part\":\"accuracy\",\"name\":$(json_str "$name"),\"attn\":$(json_str "$attn"),\"task\":\"$t\",\"test_accuracy\":$(jget "$ev" accuracy),\"test_examples\":$(jget "$ev" examples),\"best_valid_accuracy\":$best_valid,\"valid_examples\":$valid_n,\"steps\":$done_steps,\"steps_budget\":$steps,\"batch\":$batch,\"examples_seen\":$((done_steps * batch)),\"train_examples\":$(count_examples "$train"),\"wall_s\":$wall,\"minutes_budget\":$minutes,\"budget_minutes\":${budget:-null},\"calib_s_per_step\":$s_per_step,\"calib_s\":$calib_s,\"cut\":$cut,\"peak_rss_mb\":$(( $(peak_kb "$tv") / 1024 )),\"max_len\":$max_len,\"shape\":$(json_str "${shape[*]}"),\"threads\":$threads}"
    rm -f "$clock" "$budget_file"
}

if [ "$task" = listops ] || [ "$task" = both ]; then
    listops_data
    accuracy_run listops "$work/listops_train_$n.tsv" "$work/listops_val.tsv" "$work/listops_test.tsv" 2000 --tokens words
fi
if [ "$task" = text ] || [ "$task" = both ]; then
    accuracy_run text data/imdb/train.tsv.gz data/imdb/val.tsv.gz data/imdb/test.tsv.gz 4000 --tokens bytes \
        --label-col label --text-col text
fi

# Speed and memory against length, side by side with full attention: each length's pair runs back to back.
speed_file() { # L -> a TSV of speed_batch * speed_steps examples of exactly L bytes
    local f="$work/speed_$1.tsv"
    [ -s "$f" ] || python3 -c '
import random, sys
L, n = int(sys.argv[1]), int(sys.argv[2]); r = random.Random(L)
print("label\ttext")
for i in range(n): print(i % 2, "".join(r.choice("abcdefghij ") for _ in range(L)), sep="\t")' "$1" $((speed_batch * speed_steps)) >"$f"
    echo "$f"
}
speed_one() { # spec L -> "steps_per_s peak_mb"
    local f tv="$work/speed-$tag.time" log="$work/speed-$tag.log"
    f=$(speed_file "$2")
    head -3 "$f" >"$work/speed_valid.tsv"
    /usr/bin/time -v -o "$tv" "$bin" train --task classify --data "$f" --valid "$work/speed_valid.tsv" --max-len "$2" \
        --attn "$1" "${shape[@]}" --threads "$threads" --steps "$speed_steps" --batch "$speed_batch" --eval-every 0 \
        --warmup 0 --out "$work/speed-$tag.safetensors" --json >"$log" 2>"$log.err" ||
        { echo "lra_row.sh: error: speed run of $1 at $2 failed: $(tail -1 "$log.err")" >&2; return 1; }
    local s; s=$(grep '^{' "$log" | tail -1)
    python3 -c 'import json,sys; s=json.loads(sys.argv[1]); print(s["run_steps"] / s["seconds"], int(sys.argv[2]) / 1024)' "$s" "$(peak_kb "$tv")"
}
median() { python3 -c 'import statistics,sys; print(statistics.median(map(float, sys.argv[1:])))' "$@"; }
if [ "$speed" = 1 ]; then
    for L in 1024 2048 3072 4096; do
        sps=(); mb=(); fsps=(); fmb=()
        for _ in $(seq "$speed_repeats"); do # spec and full alternate, so slow spells of a shared machine hit both
            read -r a b < <(speed_one "$attn" "$L"); sps+=("$a"); mb+=("$b")
            read -r a b < <(speed_one full "$L"); fsps+=("$a"); fmb+=("$b")
        done
        emit "$(python3 -c 'import json,sys; a=sys.argv; print(json.dumps({"part":"speed","name":a[1],"attn":a[2],"len":int(a[3]),"steps_per_s":round(float(a[4]),4),"peak_rss_mb":round(float(a[5]),1),"full_steps_per_s":round(float(a[6]),4),"full_peak_rss_mb":round(float(a[7]),1),"speedup":round(float(a[4])/float(a[6]),3),"memory_ratio":round(float(a[5])/float(a[7]),3),"batch":int(a[8]),"steps":int(a[9]),"repeats":int(a[12]),"shape":a[10],"threads":int(a[11])}, separators=(",",":")))' \
            "$name" "$attn" "$L" "$(median "${sps[@]}")" "$(median "${mb[@]}")" "$(median "${fsps[@]}")" "$(median "${fmb[@]}")" \
            "$speed_batch" "$speed_steps" "${shape[*]}" "$threads" "$speed_repeats")"
    done
fi
