#!/usr/bin/env bash
# Runs the planner tests against the native core built with AddressSanitizer and UBSan (by
# hand, not in CI: ~1 min). Usage: bash scripts/check_native_asan.sh [pytest arguments]
set -euo pipefail
cd "$(dirname "$0")/.."
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
gcc -std=c11 -O1 -g -fsanitize=address,undefined -fno-sanitize-recover=undefined \
    -fno-omit-frame-pointer -fPIC -shared -Iusmp_dialect/planning/csrc \
    usmp_dialect/planning/csrc/greedy.c usmp_dialect/planning/csrc/exact.c \
    usmp_dialect/planning/csrc/graph.c -o "$work/libusmp_asan.so"
cat > "$work/run.py" <<PY
import ctypes, sys
import pytest
from usmp_dialect.planning import native
library = ctypes.CDLL("$work/libusmp_asan.so")
for name, (result, arguments) in native._SIGNATURES.items():
    function = getattr(library, name)
    function.restype, function.argtypes = result, arguments
native.load = lambda: library
sys.exit(pytest.main(["-q", "-p", "no:cacheprovider", *sys.argv[1:]]))
PY
export ASAN_OPTIONS=detect_leaks=0
export LD_PRELOAD="$(gcc -print-file-name=libasan.so) $(gcc -print-file-name=libubsan.so)"
if [ "$#" -eq 0 ]; then
    set -- test/planning/test_native_exact.py test/planning/test_native_greedy.py \
        test/planning/test_size_split.py test/planning/test_planners.py \
        test/planning/test_properties.py
fi
python "$work/run.py" "$@"
