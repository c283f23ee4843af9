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
# cli_summary NAME: the "NAME: N passed, N failed" line tests/run.sh reads; the status is 0 when none failed.
cli_summary() {
    echo "$1: $passed passed, $failed failed"
    [ "$failed" -eq 0 ]
}
