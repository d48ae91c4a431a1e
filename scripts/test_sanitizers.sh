#!/usr/bin/env bash
# Builds coda and its tests with AddressSanitizer + UndefinedBehaviorSanitizer (CODA_SANITIZE=ON)
# into build-asan/ and runs the whole CTest suite there. Any leak, out-of-bounds access or
# undefined behaviour fails the test that hit it (-fno-sanitize-recover=all).
#
#   scripts/test_sanitizers.sh            # extra arguments go to ctest
set -euo pipefail
cd "$(dirname "$0")/.."

source scripts/packages.sh
scripts/ensure_packages.sh "${CODA_BUILD_PACKAGES[@]}"

build=build-asan
cmake -S . -B "$build" -G Ninja -DCODA_SANITIZE=ON -DCODA_BUILD_BENCH=OFF \
  -DCMAKE_BUILD_TYPE=Debug >/dev/null
cmake --build "$build" -j 2
ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 \
  ctest --test-dir "$build" --output-on-failure -j 2 "$@"
