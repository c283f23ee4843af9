#!/usr/bin/env bash
# `make install` as a user meets it: installs the portable build into a temporary prefix, then checks the
# exported names (lc_ only), compiles the C library guide's example (examples/hello.c, which must match the
# "The whole program" block of docs/guides/c-library.md) against the prefix with pkg-config, linked to the shared library (run
# with LD_LIBRARY_PATH) and to the static one, runs the installed CLI's --version and man page, a DESTDIR
# install, and make uninstall; the installed CLI trains without --data outside the source tree (the corpus
# installed under share/longctx) and python/examples/quickstart.py runs on the installed package.
# Prints "install: N passed, N failed" (tests/check_all.sh adds it up).
# usage: tests/install_test.sh [make flags...]   (run from the repository root)
set -u
passed=0 failed=0
ok() { echo "ok   $1"; passed=$((passed + 1)); }
bad() { echo "FAIL $1"; failed=$((failed + 1)); }
check() { local name=$1; shift; if "$@"; then ok "$name"; else bad "$name"; fi; }
prefix=$(mktemp -d) work=$(mktemp -d) dest=$(mktemp -d) repo=$(pwd)
trap 'rm -rf "$prefix" "$work" "$dest"' EXIT
jobs=$(nproc 2>/dev/null || echo 2)

if ! make -s -j"$jobs" "$@" install PREFIX="$prefix" >"$work/make.log" 2>&1; then
    cat "$work/make.log"; bad "make install PREFIX=$prefix"; echo "install: $passed passed, $failed failed"; exit 1
fi
ok "make install PREFIX=\$tmp"
# plain `make` (what the README and docs say to run first) must build the CLI, not only the .so
check "plain make's default goal is 'all'" sh -c "make -pnq -f Makefile 2>/dev/null | grep -qx '.DEFAULT_GOAL := all'"
for f in include/longctx.h include/longctx/version.h lib/liblongctx.a lib/liblongctx.so lib/liblongctx.so.0 \
    lib/pkgconfig/longctx.pc bin/longctx share/man/man1/longctx.1; do
    [ -e "$prefix/$f" ] || bad "installed $f"
done
check "soname liblongctx.so.0" sh -c "readelf -d '$prefix/lib/liblongctx.so' | grep -q 'SONAME.*\[liblongctx.so.0\]'"
check "only lc_ names exported" bash tools/check_exports.sh "$prefix/lib/liblongctx.so"

# the C library guide's whole program, exactly as examples/hello.c
awk '/^#+ The whole program/ { sec = 1 } sec && /^```c$/ { code = 1; next } code && /^```$/ { exit } code' docs/guides/c-library.md >"$work/guide.c"
check "the C library guide's whole program is examples/hello.c" cmp -s "$work/guide.c" examples/hello.c
# the pkg-config checks need pkg-config (.ci/run installs it); without it they are skipped, not failed
has_pc=0; command -v pkg-config >/dev/null && has_pc=1
if [ "$has_pc" = 1 ]; then
    export PKG_CONFIG_PATH="$prefix/lib/pkgconfig"
    if cc -std=c11 -Wall -Werror -o "$work/hello" examples/hello.c $(pkg-config --cflags --libs longctx) 2>"$work/cc.log"; then
        out=$(LD_LIBRARY_PATH="$prefix/lib" "$work/hello" 2>&1)
        check "hello (shared library): $out" sh -c "printf '%s' \"\$1\" | grep -q 'loss [0-9.]* nats/byte'" _ "$out"
    else cat "$work/cc.log"; bad "compile hello with pkg-config --cflags --libs longctx"; fi
    libs=$(pkg-config --static --libs longctx | sed 's/-llongctx/-l:liblongctx.a/')
    if cc -std=c11 -Wall -Werror -o "$work/hello_static" examples/hello.c $(pkg-config --cflags longctx) $libs 2>"$work/cc.log"; then
        out=$(env -u LD_LIBRARY_PATH "$work/hello_static" 2>&1)
        check "hello (static library): $out" sh -c "printf '%s' \"\$1\" | grep -q 'loss [0-9.]* nats/byte'" _ "$out"
        check "static hello needs no liblongctx.so" sh -c "! readelf -d '$work/hello_static' | grep -q liblongctx"
    else cat "$work/cc.log"; bad "compile hello with pkg-config --static --libs longctx"; fi
else echo "skip pkg-config checks (pkg-config is not installed: apt-get install pkg-config)"; fi

version=$(sed -n 's/^#define LC_VERSION_STRING "\(.*\)"/\1/p' include/longctx/version.h)
out=$("$prefix/bin/longctx" --version 2>&1)
check "installed longctx --version: $out" sh -c "printf '%s' \"\$1\" | grep -q '^longctx $version (kernels: '" _ "$out"
check "man page has every command" sh -c "[ \$(grep -c '^\.SS \"longctx ' '$prefix/share/man/man1/longctx.1') -ge 8 ]"
[ "$has_pc" = 0 ] || check "pkg-config --modversion longctx is $version" sh -c "[ \"\$(pkg-config --modversion longctx)\" = '$version' ]"

# the Python package: installed beside the library, it loads the installed liblongctx.so
if /usr/bin/python3 -c "import numpy" 2>/dev/null; then
    out=$(cd "$work" && PYTHONPATH="$prefix/lib/python3/dist-packages" env -u LONGCTX_LIB /usr/bin/python3 -c \
        'import longctx; m = longctx.Model.create({"preset": "tiny"}, seed=1); print(longctx.library_path())' 2>&1)
    check "python3: import longctx from the prefix loads its library ($out)" \
        sh -c "case \"\$1\" in \"$prefix\"/*) exit 0 ;; *) exit 1 ;; esac" _ "$(readlink -f "$out" 2>/dev/null || echo "$out")"
else echo "skip python3 import (no numpy)"; fi

# the installed CLI trains from any directory: the bundled corpus is installed under share/longctx
check "installed share/longctx/tinyshakespeare.txt is data/tinyshakespeare.txt" \
    cmp -s data/tinyshakespeare.txt "$prefix/share/longctx/tinyshakespeare.txt"
tiny=(--preset tiny --layers 1 --dim 32 --heads 2 --ffn 64 --seg-len 16 --batch 2 --threads 2 --eval-every 0)
check "installed longctx train without --data, outside the source tree" \
    sh -c "cd '$work' && '$prefix/bin/longctx' train ${tiny[*]} --steps 2 --out '$work/i.ckpt' >'$work/train.log' 2>&1"
check "... trained on the installed corpus" \
    sh -c "'$prefix/bin/longctx' eval --ckpt '$work/i.ckpt' --threads 2 2>&1 | grep -q '^data: $prefix/share/longctx/tinyshakespeare.txt, the data'"
# the Python example imports the package Python finds (here the installed one), not the source tree's
if /usr/bin/python3 -c "import numpy" 2>/dev/null; then
    out=$(cd "$work" && PYTHONPATH="$prefix/lib/python3/dist-packages" env -u LONGCTX_LIB /usr/bin/python3 \
        "$repo/python/examples/quickstart.py" --steps 2 --threads 2 --out "$work/q.ckpt" --plot "$work/q.png" 2>&1)
    pkg=$(printf '%s\n' "$out" | sed -n 's/^package: //p')
    check "quickstart.py uses the installed package (package: ${pkg:-none})" \
        sh -c "case \"\$1\" in \"$prefix\"/*) exit 0 ;; *) exit 1 ;; esac" _ "$pkg"
else echo "skip quickstart.py (no numpy)"; fi

# DESTDIR: staged under it, the paths inside (longctx.pc) name the final prefix
if make -s "$@" install DESTDIR="$dest" PREFIX=/opt/lc >"$work/make.log" 2>&1; then
    check "make install DESTDIR: staged, longctx.pc says prefix=/opt/lc" \
        sh -c "[ -x '$dest/opt/lc/bin/longctx' ] && grep -qx 'prefix=/opt/lc' '$dest/opt/lc/lib/pkgconfig/longctx.pc'"
    # a binary whose corpus is not where it was installed to (staged, not yet moved to /opt/lc) says to pass --data
    if [ ! -e /opt/lc/share/longctx/tinyshakespeare.txt ]; then
        err=$(cd "$work" && "$dest/opt/lc/bin/longctx" train --preset tiny --steps 1 2>&1 >/dev/null); rc=$?
        check "no corpus anywhere: exit 2, one line that says to pass --data ($err)" sh -c "[ $rc -eq 2 ] && \
            [ \"\$(printf '%s\n' \"\$1\" | wc -l)\" -eq 1 ] && printf '%s' \"\$1\" | grep -q \
            '^longctx: error: train: no --data given, .*/opt/lc/share/longctx/tinyshakespeare.txt: pass --data FILE$'" _ "$err"
    fi
else cat "$work/make.log"; bad "make install DESTDIR"; fi
make -s "$@" uninstall PREFIX="$prefix" >"$work/make.log" 2>&1
left=$(find "$prefix" ! -type d | head -3)
check "make uninstall leaves no file${left:+ (left: $left)}" test -z "$left"
echo "install: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
