#!/usr/bin/env bash
# The Python binding's tests (python/tests, plain unittest) against this build's shared library and CLI:
#   bash tests/py_test.sh BUILD/longctx
# Uses Debian's /usr/bin/python3 (override: LC_PYTHON) with numpy; without them it prints SKIP and counts
# nothing, as it does with LC_NO_PYTHON=1 (set by make BARE=1). The library is BUILD/liblongctx.so (built with `make BUILD=... shared` when absent).
# Ends with "py_test: N passed, N failed" (tests/run.sh sums it).
set -u
cli=${1:-build/release/longctx}
build=$(dirname "$cli")
py=${LC_PYTHON:-/usr/bin/python3}
cd "$(dirname "$0")/.."
if [ "${LC_NO_PYTHON:-0}" = 1 ]; then
    echo "SKIP py_test: LC_NO_PYTHON=1 (make BARE=1: built as on a machine without numpy)"
    echo "py_test: 0 passed, 0 failed"
    exit 0
fi
if ! [ -x "$py" ] || ! "$py" -c "import numpy" 2>/dev/null; then
    echo "SKIP py_test: $py with numpy is not available (apt-get install python3-numpy)"
    echo "py_test: 0 passed, 0 failed"
    exit 0
fi
if ! [ -e "$build/liblongctx.so" ]; then
    echo "py_test: building $build/liblongctx.so (make BUILD=$build shared)"
    if ! make -s BUILD="$build" VARIANT="${LC_VARIANT:-release}" shared >/dev/null; then
        echo "FAIL py_test: could not build $build/liblongctx.so"
        echo "py_test: 0 passed, 1 failed"
        exit 1
    fi
fi
LONGCTX_LIB="$build/liblongctx.so" LONGCTX_CLI="$cli" PYTHONPATH=python OMP_WAIT_POLICY=passive \
"$py" - <<'PY'
import sys, time, unittest
start = time.time()
suite = unittest.defaultTestLoader.discover("python/tests", top_level_dir="python/tests")
r = unittest.TextTestRunner(stream=sys.stdout, verbosity=1).run(suite)
failed = len(r.failures) + len(r.errors) + len(r.unexpectedSuccesses)
passed = r.testsRun - failed - len(r.skipped)
print("   (python/tests: %.1f s, %d skipped)" % (time.time() - start, len(r.skipped)))
print("py_test: %d passed, %d failed" % (passed, failed))
sys.exit(1 if failed else 0)
PY
