#!/usr/bin/env bash
# Checks that every relative link of the Markdown pages resolves: `[text](path)` and `![alt](path)` name a
# file or folder that exists (relative to the page), and `path#anchor` / `#anchor` a heading of that page
# (GitHub's anchors: lower case, punctuation dropped, spaces to hyphens, -1, -2 ... for repeats). Links
# inside code (fenced blocks, `inline spans`) and absolute URLs are not checked. Shell and awk only.
# usage: bash tests/docs_links_test.sh [LONGCTX (ignored)] [PAGE|FOLDER ...]
#        (default: docs/results and experiments, run from anywhere in the repository)
set -u
cd "$(dirname "$0")/.."
shift $(( $# > 0 ? 1 : 0 ))
passed=0 failed=0

# anchors FILE: the anchors of FILE's headings, one a line
anchors() {
    awk '
        /^(```|~~~)/ { fence = !fence; next }
        fence { next }
        /^#+ / {
            h = $0; sub(/^#+ +/, "", h); sub(/ +#* *$/, "", h)
            h = tolower(h)
            gsub(/[^a-z0-9 _-]/, "", h)
            gsub(/ /, "-", h)
            n = seen[h]++
            print (n ? h "-" n : h)
        }' "$1"
}

# links FILE: "LINE<TAB>TARGET" for every link outside code
links() {
    awk '
        /^ *(```|~~~)/ { fence = !fence; next }
        fence { next }
        {
            s = $0
            gsub(/`[^`]*`/, "", s)                      # inline code spans
            while (match(s, /\]\([^) ]+\)/)) {
                t = substr(s, RSTART + 2, RLENGTH - 3)
                print NR "\t" t
                s = substr(s, RSTART + RLENGTH)
            }
        }' "$1"
}

# check_page FILE: one failure line per broken link; returns the number of broken links (capped)
check_page() {
    local page=$1 dir bad=0 line target path anchor
    dir=$(dirname "$page")
    while IFS=$'\t' read -r line target; do
        case "$target" in http://*|https://*|mailto:*) continue ;; esac
        path=${target%%#*}
        anchor=
        [[ "$target" == *#* ]] && anchor=${target#*#}
        if [ -n "$path" ]; then
            path="$dir/$path"
            if [ ! -e "$path" ]; then
                echo "FAIL: $page:$line: $target: no such file"; bad=$((bad + 1)); continue
            fi
        else
            path=$page
        fi
        if [ -n "$anchor" ] && [[ "$path" == *.md ]] && ! anchors "$path" | grep -qxF -- "$anchor"; then
            echo "FAIL: $page:$line: $target: no heading with that anchor"; bad=$((bad + 1))
        fi
    done < <(links "$page")
    return $(( bad > 100 ? 100 : bad ))
}

# the checker must see a broken file link, a broken anchor and a link in code as it should
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
printf '# A page\n\n## Two words, here\n\n[ok](#two-words-here) [bad](missing.md) [bad anchor](#nowhere)\n`[code](not-checked.md)`\n```\n[fenced](not-checked.md)\n```\n' >"$tmp/t.md"
out=$(check_page "$tmp/t.md"); rc=$?
if [ "$rc" -eq 2 ] && grep -q 'missing.md: no such file' <<<"$out" && grep -q '#nowhere: no heading' <<<"$out"; then
    passed=$((passed + 1))
else
    failed=$((failed + 1)); echo "FAIL: the checker's self-test (exit $rc): $out"
fi

targets=("$@")
[ ${#targets[@]} -eq 0 ] && targets=(docs/results experiments)
while IFS= read -r page; do
    if check_page "$page"; then passed=$((passed + 1)); else failed=$((failed + 1)); fi
done < <(find "${targets[@]}" -name '*.md' -type f | sort)

echo "docs_links_test: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
