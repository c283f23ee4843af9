#!/usr/bin/env bash
# Lists every command of the longctx CLI, one a line, in the order of `longctx --help`: each command, then
# the subcommands its `--help` names (bench train, hibert pretrain, ...) and the tasks with a `--help` of
# their own that it names ("(eval --task summarize|classify --help)": eval --task summarize, ...). Read by the generators of the man
# page (tools/gen_man.sh) and of docs/reference/cli.md (docs/reference/gen_cli.sh), and by
# tests/docs_commands_test.sh, so all three see the same commands.
# usage: tools/cli_commands.sh PATH/TO/longctx
set -euo pipefail
bin=$1
commands=$("$bin" --help | sed -n '/^commands:/,/^$/p' | sed -n 's/^  \([a-z][a-z-]*\) .*/\1/p')
for c in $commands; do
    echo "$c"
    help=$("$bin" "$c" --help 2>&1)
    printf '%s\n' "$help" | sed -n "s/^ *\(usage: \)\{0,1\}longctx $c \([a-z][a-z-]*\) .*/$c \2/p" | awk '!seen[$0]++'
    printf '%s\n' "$help" | sed -n "s/.*($c --task \([a-z0-9|]*\) --help.*/\1/p" | tr '|' '\n' | awk -v c="$c" 'NF && !seen[$0]++ { print c " --task " $0 }'
done
