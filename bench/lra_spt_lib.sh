# Shared by bench/lra_spt_text.sh and bench/lra_spt_listops.sh (sourced, not run): resumable stages of a
# self-pretraining recipe. Each stage ends by writing WORK/NAME.done (the command's JSON summary line); a
# stage whose .done exists is skipped, and a stage interrupted (a machine that goes away, SIGINT, reboot) continues
# from its last periodic save when the script is run again. Every stage appends one JSON line per step to
# WORK/NAME.log and its stderr to WORK/NAME.err. Sets and uses mode, W (the work folder), BIN (the longctx
# binary) and T (threads).

spt_say() { echo "[$(date -u +%H:%M:%S)] $*" >&2; }

mode=spt; W=$PWD/lra-runs; BIN=$PWD/longctx; T=1
# spt_common FLAG VALUE: the flags every recipe takes (--mode, --work, --bin, --threads); status 1 for another.
spt_common() {
    case $1 in
    --mode) mode=$2 ;;
    --work) W=$2 ;;
    --bin) BIN=$2 ;;
    --threads) T=$2 ;;
    *) return 1 ;;
    esac
}
# spt_init SCRIPT: checks --mode and --bin, makes the work folder and the paths absolute.
spt_init() {
    case $mode in spt|scratch) ;; *) echo "$1: error: --mode must be spt or scratch" >&2; exit 2 ;; esac
    mkdir -p "$W"
    W=$(cd "$W" && pwd); BIN=$(cd "$(dirname "$BIN")" && pwd)/$(basename "$BIN")
    [ -x "$BIN" ] || { echo "$1: error: --bin $BIN is not an executable (run make)" >&2; exit 2; }
}

# spt_args SCRIPT ARGS...: the flags every recipe takes (spt_common) and the script's own --NAME N, each
# setting the variable NAME (dashes as underscores) to which the script gave a default before the call;
# anything else is refused. Then spt_init.
spt_args() {
    local script=$1 var
    shift
    while [ $# -gt 0 ]; do
        spt_common "$1" "${2-}" && { shift 2; continue; }
        var=${1#--} && var=${var//-/_}
        if [[ $1 == --* && $var =~ ^[a-z_]+$ ]] && [ -n "${!var+set}" ] && [ $# -ge 2 ]; then
            printf -v "$var" '%s' "$2"
            shift 2
            continue
        fi
        echo "$script: error: unknown argument '$1' (see the usage at the top of the script)" >&2
        exit 2
    done
    spt_init "$script"
}

# spt_lm NAME STEPS -- FLAGS: a byte-level masked LM (`longctx train --objective mlm`) into W/NAME.ckpt,
# run inside W (the checkpoint records its --data path, which --resume reads back).
spt_lm() {
    local name=$1 steps=$2
    shift 3
    [ -e "$W/$name.done" ] && { spt_say "$name: done"; return 0; }
    local args=(--resume "$name.ckpt")
    [ -s "$W/$name.ckpt" ] || args=("$@")
    spt_say "$name: $BIN train ${args[*]} --steps $steps"
    (cd "$W" && "$BIN" train "${args[@]}" --steps "$steps" --threads "$T" --save-every-min 10 \
        --log "$name.log" --json --out "$name.ckpt" >"$name.out" 2>>"$name.err")
    tail -1 "$W/$name.out" >"$W/$name.done"
}

# spt_cls NAME STEPS TRAIN VALID -- FLAGS: `longctx train --task classify` (either objective) into
# W/NAME.safetensors (the best by validation) and W/NAME.safetensors.last.
spt_cls() {
    local name=$1 steps=$2 data=$3 valid=$4
    shift 5
    [ -e "$W/$name.done" ] && { spt_say "$name: done"; return 0; }
    local out=$W/$name.safetensors args=("$@")
    [ -s "$out.last" ] && args=(--resume "$out.last")
    spt_say "$name: $BIN train --task classify --data $data --valid $valid ${args[*]} --steps $steps"
    "$BIN" train --task classify --data "$data" --valid "$valid" "${args[@]}" --steps "$steps" --threads "$T" \
        --save-every-min 10 --log "$W/$name.log" --json --out "$out" >"$W/$name.out" 2>>"$W/$name.err"
    tail -1 "$W/$name.out" >"$W/$name.done"
}

# spt_eval NAME CKPT DATA: test accuracy into W/NAME.json (skipped when it exists).
spt_eval() {
    local name=$1 ckpt=$2 data=$3
    [ -s "$W/$name.json" ] && { spt_say "$name: done"; return 0; }
    spt_say "$name: $BIN eval --ckpt $ckpt --task classify --data $data"
    local t0=$SECONDS
    "$BIN" eval --ckpt "$ckpt" --task classify --data "$data" --threads "$T" --json >"$W/$name.tmp"
    python3 -c 'import json,sys; d=json.loads(open(sys.argv[1]).read().splitlines()[-1]); d["seconds"]=int(sys.argv[2]); print(json.dumps(d))' \
        "$W/$name.tmp" $((SECONDS - t0)) >"$W/$name.json"
    rm -f "$W/$name.tmp"
}

# spt_spread FILE N OUT: N examples spread evenly over a labelled file (every k-th, header kept): the periodic
# validation set (data/imdb's files are sorted by label, so never the first N).
spt_spread() {
    [ -s "$3" ] && return 0
    python3 - "$1" "$2" "$3" <<'EOF'
import gzip, sys
src, n, out = sys.argv[1], int(sys.argv[2]), sys.argv[3]
opener = gzip.open if open(src, "rb").read(2) == b"\x1f\x8b" else open
lines = opener(src, "rb").read().split(b"\n")
head, rows = lines[0], [l for l in lines[1:] if l]
k = max(1, len(rows) // n)
open(out + ".tmp", "wb").write(b"\n".join([head] + rows[::k][:n]) + b"\n")
EOF
    mv "$3.tmp" "$3"
}

# spt_wall NAME...: the summed elapsed_s of the stages' step logs (each resumed part counted once: the
# last line before each restart), in seconds.
spt_wall() {
    local f
    for f in "$@"; do [ -s "$W/$f.log" ] && cat "$W/$f.log"; done | python3 -c '
import json, sys
total = last = 0.0
for line in sys.stdin:
    e = json.loads(line).get("elapsed_s")
    if e is None: continue
    if e < last: total += last
    last = e
print(round(total + last))'
}
