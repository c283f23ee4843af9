# Shared set-up and helpers of the CLI test scripts (tests/cli_*test.sh), sourced by each after
# `set -u` and `bin=$1`. Makes $tmp (a fresh directory removed on exit), the counters $passed and
# $failed, and the helpers below; each script ends with `cli_summary NAME`.
# Set cli_one_line_errors=1 before `expect` runs to also require stderr of at most one line (the
# README's contract for errors; the commands of cli_test.sh print a progress bar before some errors).
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
passed=0 failed=0
cli_one_line_errors=${cli_one_line_errors:-0}

# expect CODE PATTERN -- command...: exit code must be CODE and stderr must match PATTERN (grep -E).
expect() {
    local code=$1 pattern=$2; shift 3
    "$@" >"$tmp/out" 2>"$tmp/err"
    local rc=$? lines_ok=1
    if [ "$cli_one_line_errors" -eq 1 ] && [ "$(wc -l <"$tmp/err")" -gt 1 ]; then lines_ok=0; fi
    if [ "$rc" -eq "$code" ] && grep -Eq -- "$pattern" "$tmp/err" && [ "$lines_ok" -eq 1 ]; then
        passed=$((passed + 1))
    else
        failed=$((failed + 1))
        echo "FAIL: $* -> exit $rc (want $code), stderr: $(head -c 300 "$tmp/err")"
    fi
    if [ "$rc" -ge 128 ]; then echo "CRASH (signal) in: $*"; fi
}
check() { # check DESCRIPTION -- command: succeeds when the command does
    local what=$1; shift 2
    if "$@" >"$tmp/out" 2>"$tmp/err"; then passed=$((passed + 1)); else
        failed=$((failed + 1)); echo "FAIL: $what: $(tail -c 300 "$tmp/err")"; fi
}
# pycheck DESCRIPTION -- python3 ...: check, where python3 is installed; elsewhere (a bare machine) a note
# says the check was skipped, and nothing is counted.
pycheck() {
    if command -v python3 >/dev/null 2>&1; then check "$@"; else echo "note: python3 not found: skipped: $1"; fi
}
# ckpt_set_meta IN OUT KEY=VALUE...: OUT is the checkpoint IN with those metadata values rewritten in its
# safetensors JSON header (a key that is absent is added) and every tensor byte kept: the CLI tests craft
# checkpoints whose metadata lies about the tensors they hold. Shell and coreutils only (a bare machine has
# no python3).
ckpt_set_meta() {
    local in=$1 out=$2 n header kv key value len hex i LC_ALL=C
    shift 2
    n=$(od -An -tu8 -N8 "$in" | tr -d ' ')
    header=$(head -c $((n + 8)) "$in" | tail -c "$n" | sed 's/ *$//')
    for kv in "$@"; do
        key=${kv%%=*} value=${kv#*=}
        if [[ $header == *"\"$key\":\""* ]]; then
            header=$(printf '%s' "$header" | sed "s/\"$key\":\"[^\"]*\"/\"$key\":\"$value\"/")
        else
            header=${header/\"__metadata__\":\{/\"__metadata__\":\{\"$key\":\"$value\",}
        fi
    done
    while [ $((${#header} % 8)) -ne 0 ]; do header+=" "; done
    len=${#header} hex=""
    for i in 0 1 2 3 4 5 6 7; do hex+=$(printf '\\x%02x' $(((len >> (8 * i)) & 255))); done
    { printf "$hex"; printf '%s' "$header"; tail -c +$((n + 9)) "$in"; } >"$out"
}
# signal_run SIGNAL PATTERN ERR SETTLE -- command...: starts the command (stdout dropped, stderr to ERR), waits
# until ERR has a line matching PATTERN (grep -E; up to 20 s), SETTLE seconds more, sends SIGNAL and waits for
# it to end; its exit status is in $signal_rc.
signal_run() {
    local sig=$1 pattern=$2 err=$3 settle=$4 pid i
    shift 5
    "$@" >/dev/null 2>"$err" &
    pid=$!
    for ((i = 0; i < 200; i++)); do grep -Eq -- "$pattern" "$err" 2>/dev/null && break; sleep 0.1; done
    sleep "$settle"
    kill -"$sig" "$pid"
    wait "$pid"
    signal_rc=$?
}
# Made-up news for the HIBERT commands: news_sentence D I is sentence I of document D (distinct words, so ROUGE
# has something to find); news_article D N, N of them joined by spaces.
news_words=(market rates bank shares profit growth team match coach league film award actor music vote party
            minister election phone network software users price energy oil firms court judge police report)
news_sentence() {
    local d=$1 i=$2
    local w1=${news_words[$(( (d * 7 + i * 3) % 30 ))]} w2=${news_words[$(( (d * 5 + i * 11 + 1) % 30 ))]}
    printf 'The %s of item %d moved the %s by %d points in week %d.' "$w1" "$d" "$w2" $(( d * 3 + i )) "$i"
}
news_article() {
    local d=$1 n=$2 i out=""
    for ((i = 0; i < n; i++)); do out+="$(news_sentence "$d" "$i") "; done
    printf '%s' "${out% }"
}
# news_corpus MIN SPREAD ASPREAD: $tmp/docs/doc00.txt .. doc19.txt, document D of MIN + D % SPREAD sentences, and
# $tmp/bbc, a BBC-layout root (articles/t/001.txt .. 010.txt: "Title D", a blank line, 5 + D % ASPREAD sentences;
# summaries/t/: sentences 0 and 3 of each).
news_corpus() {
    local d n
    mkdir -p "$tmp/docs" "$tmp/bbc/articles/t" "$tmp/bbc/summaries/t"
    for ((d = 0; d < 20; d++)); do news_article "$d" $(( $1 + d % $2 )) >"$tmp/docs/doc$(printf %02d "$d").txt"; done
    for ((d = 1; d <= 10; d++)); do
        n=$(printf %03d "$d")
        { printf 'Title %d\n\n' "$d"; news_article "$d" $(( 5 + d % $3 )); printf '\n'; } >"$tmp/bbc/articles/t/$n.txt"
        printf '%s%s' "$(news_sentence "$d" 0)" "$(news_sentence "$d" 3)" >"$tmp/bbc/summaries/t/$n.txt"
    done
}
# cli_summary NAME: the "NAME: N passed, N failed" line tests/run.sh reads; the status is 0 when none failed.
cli_summary() {
    echo "$1: $passed passed, $failed failed"
    [ "$failed" -eq 0 ]
}
