#!/usr/bin/env bash
# The documentation against the program and the tree (shell and awk only: it runs on a bare Debian 12).
# Every shell command in the README's and docs/guides/*.md's sh/bash code blocks is read (continuation
# lines joined, comments dropped): each `longctx COMMAND` names a command, each of its --flags is in that
# command's --help, each repository file it names exists, and the cheap ones (--help, --version, and the
# commands of CHEAP below whose input files exist by then) run and succeed, in a scratch folder that links
# the repository's data and models, one folder per page so a page's commands may use each other's outputs.
# Then: the generated references (docs/reference/cli.md, c-api.md; python-api.md and its pages where python3 is
# installed) equal what their generators write now; no Markdown file outside build/ says "session";
# none has more than 400 lines; docs/ holds no loose data files at its top level; the README's layout
# section names only paths that exist and every folder of src/; the links of the README, guides, reference
# and design pages lead to files that exist.
# usage: tests/docs_commands_test.sh path/to/longctx
set -u
bin=$1
source "$(dirname "${BASH_SOURCE[0]}")/cli_lib.sh"
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
case "$bin" in /*) ;; *) bin=$PWD/$bin ;; esac
cd "$root" || exit 1
fail() { failed=$((failed + 1)); echo "FAIL: $*"; }
ok() { passed=$((passed + 1)); }
# Commands run when their input files exist: quick ones (well under a second or two on the data/ and
# models/ files); everything else (training, benchmarks, MPI) is only checked.
CHEAP=" listops predict summarize export plot attn-map "
max_lines=400

# ---- the commands of the CLI, and the flags each one's --help names: known["HELPFILE|--flag"]
mkdir -p "$tmp/help"
commands=$(bash tools/cli_commands.sh "$bin") || fail "tools/cli_commands.sh $bin"
declare -A known is_command
"$bin" --help >"$tmp/help/_" 2>&1
while read -r -a words; do
    is_command["${words[*]}"]=1
    "$bin" "${words[@]}" --help >"$tmp/help/$(IFS=_; echo "${words[*]}")" 2>&1 || fail "longctx ${words[*]} --help exits non-zero"
done <<<"$commands"
check "the CLI lists its commands" -- test "${#is_command[@]}" -ge 10
while IFS=$'\t' read -r file flag; do known["$file|$flag"]=1; done < <(cd "$tmp/help" && awk '{
    s = $0; while (match(s, /--[A-Za-z0-9][-A-Za-z0-9]*/)) { print FILENAME "\t" substr(s, RSTART, RLENGTH); s = substr(s, RSTART + RLENGTH) } }' *)

# ---- the shell commands of the README and the guides, one a line: FILE:LINE, the command, and its words
# (quotes group words and are removed; the operators | || && ; > >> < stand alone), tab-separated, the
# words separated by \037.
pages=(README.md docs/guides/*.md)
awk '
    FNR == 1 { inblock = 0; cont = "" }
    /^ *```/ {
        if (inblock) { inblock = 0; next }
        lang = $0; sub(/^ *```/, "", lang); inblock = 1; shell = (lang ~ /^(sh|bash|shell|console)$/); next
    }
    !inblock || !shell { next }
    {
        line = $0; sub(/^ *\$ /, "", line)
        if (cont != "") line = cont " " line; else start = FNR
        if (line ~ /\\$/) { sub(/\\$/, "", line); cont = line; next }
        cont = ""
        # a comment: "#" at the start or after a blank, outside quotes
        out = ""; q = ""
        for (i = 1; i <= length(line); i++) {
            c = substr(line, i, 1)
            if (q == "" && c == "#" && (i == 1 || substr(line, i - 1, 1) ~ /[ \t]/)) break
            if (q == "" && (c == "\"" || c == "\047")) q = c; else if (c == q) q = ""
            out = out c
        }
        sub(/[ \t]+$/, "", out); sub(/^[ \t]+/, "", out)
        if (out == "") next
        words = ""; w = ""; q = ""; has = 0
        for (i = 1; i <= length(out); i++) {
            c = substr(out, i, 1)
            if (q != "") { if (c == q) q = ""; else w = w c; continue }
            if (c == "\"" || c == "\047") { q = c; has = 1; continue }
            if (c == " " || c == "\t") { if (has) words = words w "\037"; w = ""; has = 0; continue }
            if (c ~ /[|&;<>]/) {
                if (has) words = words w "\037"
                w = c; while (substr(out, i + 1, 1) ~ /[|&>]/) { i++; w = w substr(out, i, 1) }
                words = words w "\037"; w = ""; has = 0; continue
            }
            w = w c; has = 1
        }
        if (has) words = words w "\037"
        printf "%s:%d\t%s\t%s\n", FILENAME, start, out, words
    }' "${pages[@]}" >"$tmp/commands"
n_commands=$(wc -l <"$tmp/commands")
check "commands were found in the README and the guides" -- test "$n_commands" -ge 20

repo_path='^(\./)?(data|models|docs|bench|tests|python|examples|src|include|tools|experiments|\.ci)/'
declare -A scratch outputs
runs=0 pages_run=0
while IFS=$'\t' read -r where cmd wordstr; do
    page=${where%%:*}
    IFS=$'\037' read -r -a w <<<"$wordstr"
    runnable=0 inputs=() n=${#w[@]} i=0
    outputs=()
    first=""   # the segment's first word (after VAR=value assignments): longctx, or a launcher of it
    while [ "$i" -lt "$n" ]; do
        t=${w[$i]}
        case "$t" in
        '>' | '>>') outputs["${w[$((i + 1))]:-}"]=1; i=$((i + 2)); continue ;;
        '|' | '||' | '&&' | ';') first=""; i=$((i + 1)); continue ;;
        esac
        if [ -z "$first" ] && [[ ! "$t" =~ ^[A-Za-z_][A-Za-z0-9_]*= ]]; then first=$t; fi
        if [[ "$t" =~ (^|/)longctx$ ]] && { [ "$first" = "$t" ] || [[ " mpirun nice timeout env time " == *" $first "* ]]; }; then
            # the command: the longest of "A B" and "A" the CLI has, or none before a flag
            a=${w[$((i + 1))]:-} b=${w[$((i + 2))]:-} path=""
            if [ -n "${is_command["$a $b"]:-}" ]; then path="$a $b"; i=$((i + 3))
            elif [ -n "${is_command["$a"]:-}" ]; then path=$a; i=$((i + 2))
            elif [[ "$a" == -* ]]; then i=$((i + 1))
            else fail "$where: 'longctx $a': no such command: $cmd"; i=$((i + 1)); continue
            fi
            # a task with a --help of its own (train --task classify, eval --task summarize): its flags
            for ((j = i; j < n - 1; j++)); do
                case "${w[$j]}" in '|' | '||' | '&&' | ';' | '>' | '>>' | '<') break ;; esac
                if [ "${w[$j]}" = --task ] && [ -n "${is_command["$path --task ${w[$((j + 1))]}"]:-}" ]; then
                    path="$path --task ${w[$((j + 1))]}"; break
                fi
            done
            help=${path// /_}; help=${help:-_}
            if [ -z "$path" ] || [[ "$CHEAP" == *" ${path%% *} "* ]]; then runnable=1; fi
            while [ "$i" -lt "$n" ]; do
                t=${w[$i]}
                case "$t" in '|' | '||' | '&&' | ';' | '>' | '>>' | '<') break ;; esac
                if [[ "$t" =~ ^--[A-Za-z0-9][-A-Za-z0-9]*(=.*)?$ ]]; then
                    flag=${t%%=*}
                    case "$flag" in --help | --version) runnable=1 ;; esac
                    if [ "$flag" = --help ] || { [ -z "$path" ] && [ "$flag" = --version ]; } ||
                        [ -n "${known["$help|$flag"]:-}" ]; then ok
                    else fail "$where: 'longctx $path' has no flag $flag (not in its --help): $cmd"
                    fi
                    case "$flag" in --out | --log) outputs["${w[$((i + 1))]:-}"]=1 ;; esac
                elif [[ "$t" != -* && ( "$t" == */* || "$t" =~ \.(txt|tsv|ckpt|safetensors|jsonl|json|gz|svg)$ ) ]]; then
                    inputs+=("$t")
                fi
                i=$((i + 1))
            done
            continue
        fi
        i=$((i + 1))
    done
    # repository files the command names (outputs and shell expansions left out)
    for t in "${w[@]}"; do
        [[ "$t" =~ $repo_path && ! "$t" =~ [\$\*] ]] || continue
        t=${t%[,;:)]}
        [ -n "${outputs["$t"]:-}" ] && continue
        if [ -e "$t" ]; then ok; else fail "$where: no such file in the repository: $t"; fi
    done
    # the cheap commands run, in the page's scratch folder, where what they read is there
    [ "$runnable" -eq 1 ] && [[ "${w[0]}" =~ (^|/)longctx$ ]] || continue
    if [ -z "${scratch[$page]:-}" ]; then
        pages_run=$((pages_run + 1)); scratch[$page]=$tmp/run$pages_run
        mkdir "${scratch[$page]}"
        for d in data models docs bench python examples include; do ln -s "$root/$d" "${scratch[$page]}/$d"; done
        ln -s "$bin" "${scratch[$page]}/longctx"
    fi
    for t in "${inputs[@]}"; do
        [ -n "${outputs["$t"]:-}" ] && continue
        [ -e "${scratch[$page]}/$t" ] || { runnable=0; break; }
    done
    [ "$runnable" -eq 1 ] || continue
    runs=$((runs + 1))
    if (cd "${scratch[$page]}" && PATH=$PWD:$PATH timeout 20 bash -c "$cmd" >"$tmp/out" 2>"$tmp/err"); then ok
    else fail "$where: exit $? from: $cmd: $(tail -c 300 "$tmp/err")"
    fi
done <"$tmp/commands"
check "some of the commands ran" -- test "$runs" -ge 5
echo "note: $n_commands commands read, $runs of them run"

# ---- the links of the README, the guides, the reference and the design page lead to files that exist
while IFS=$'\t' read -r f target; do
    t=${target%%#*}
    [ -n "$t" ] || { ok; continue; }
    if [ -e "${f%/*}/$t" ] || { [ "$f" = README.md ] && [ -e "$t" ]; }; then ok; else fail "$f: a link to $target, which does not exist"; fi
done < <(awk '{ s = $0; while (match(s, /\]\([^) ]+\)/)) { t = substr(s, RSTART + 2, RLENGTH - 3); s = substr(s, RSTART + RLENGTH)
              if (t !~ /^[a-z]+:/) print FILENAME "\t" t } }' README.md docs/guides/*.md docs/reference/*.md docs/design.md)

# ---- the generated references are up to date
# same WHAT GENERATED COMMITTED: the committed file or folder equals the generated one
same() {
    if diff -r "$2" "$3" >"$tmp/diff" 2>&1; then ok
    else fail "$3 is not what $1 writes now (regenerate it): $(head -c 300 "$tmp/diff")"; fi
}
bash docs/reference/gen_cli.sh "$bin" "$tmp/ref" >/dev/null 2>&1
same docs/reference/gen_cli.sh "$tmp/ref/cli.md" docs/reference/cli.md
same docs/reference/gen_cli.sh "$tmp/ref/cli" docs/reference/cli
bash docs/reference/gen_capi.sh "$tmp/ref" >/dev/null 2>&1
same docs/reference/gen_capi.sh "$tmp/ref/c-api.md" docs/reference/c-api.md
same docs/reference/gen_capi.sh "$tmp/ref/c-api" docs/reference/c-api
if command -v python3 >/dev/null 2>&1; then
    python3 docs/reference/gen_python_api.py "$tmp/ref" >/dev/null 2>&1
    same docs/reference/gen_python_api.py "$tmp/ref/python-api.md" docs/reference/python-api.md
    same docs/reference/gen_python_api.py "$tmp/ref/python-api" docs/reference/python-api
else
    echo "note: python3 not found: skipped: docs/reference/python-api.md is current"
fi

# ---- every Markdown file: no "session", at most $max_lines lines
mapfile -t md < <(find . \( -path ./build -o -path ./.git \) -prune -o -name '*.md' -print | sort)
check "Markdown files were found" -- test "${#md[@]}" -ge 10
while IFS=$'\t' read -r f lines session; do
    if [ "$session" -gt 0 ]; then fail "$f says 'session' (line $session)"; else ok; fi
    if [ "$lines" -gt "$max_lines" ]; then fail "$f has $lines lines (at most $max_lines: split it)"; else ok; fi
done < <(awk 'FNR == 1 && NR > 1 { print f "\t" n "\t" s } FNR == 1 { f = FILENAME; n = 0; s = 0 }
              { n++ } !s && tolower($0) ~ /session/ { s = FNR } END { if (NR) print f "\t" n "\t" s }' "${md[@]}")

# ---- docs/ top level: pages and scripts only; data files live in a folder
for f in docs/*; do
    [ -f "$f" ] || continue
    case "$f" in *.md | *.sh) ok ;; *) fail "$f: a loose data file at docs/'s top level (docs/results/, experiments/ or docs/figures/)" ;; esac
done

# ---- the README's layout section against the tree
awk '/^## Layout/ { on = 1; next } on && /^## / { exit } on && /^```/ { n++; next } on && n == 1 && /^[^ ]/ { print $1 }' \
    README.md >"$tmp/layout"
check "the README has a layout section" -- test "$(wc -l <"$tmp/layout")" -ge 8
while read -r p; do
    if [ -e "$p" ]; then ok; else fail "README layout: $p does not exist"; fi
done <"$tmp/layout"
for d in src/*/ include/ python/ tests/ bench/ experiments/ models/ data/ docs/; do
    d=${d%/}
    if grep -qE "^$d/?$" "$tmp/layout"; then ok; else fail "README layout: $d is not named"; fi
done
cli_summary docs_commands_test
