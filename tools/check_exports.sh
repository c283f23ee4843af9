#!/usr/bin/env bash
# Fails (one line per name) when a shared library exports a symbol whose name does not start with lc_
# (the library's public prefix; tools/exports.map hides the rest). Used by tests/install_test.sh.
# usage: tools/check_exports.sh path/to/liblongctx.so
set -euo pipefail
so=$1
names=$(nm -D --defined-only "$so" | awk 'NF >= 3 { sub(/@.*/, "", $3); print $3 }')
[ -n "$names" ] || { echo "check_exports: $so exports nothing" >&2; exit 1; }
bad=$(printf '%s\n' "$names" | grep -v '^lc_' || true)
if [ -n "$bad" ]; then
    printf 'check_exports: %s exports a name without the lc_ prefix: %s\n' "$so" $bad >&2
    exit 1
fi
echo "check_exports: $(printf '%s\n' "$names" | wc -l) exported names, all lc_"
