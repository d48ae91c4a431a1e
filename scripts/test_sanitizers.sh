#!/usr/bin/env bash
# Runs the CTest suite in the sanitized build (scripts/sanitized_build.sh: clang, AddressSanitizer
# + UndefinedBehaviorSanitizer, -O1). Any leak, out-of-bounds access or undefined behaviour fails
# the test that hit it (-fno-sanitize-recover=all).
#
#   scripts/test_sanitizers.sh            # extra arguments go to ctest
set -euo pipefail
cd "$(dirname "$0")/.."

scripts/sanitized_build.sh
ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 \
  ctest --test-dir build-asan --output-on-failure -j 2 "$@"
