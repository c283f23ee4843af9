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
# cli_summary NAME: the "NAME: N passed, N failed" line tests/run.sh reads; the status is 0 when none failed.
cli_summary() {
    echo "$1: $passed passed, $failed failed"
    [ "$failed" -eq 0 ]
}
