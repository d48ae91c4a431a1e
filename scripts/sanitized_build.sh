#!/usr/bin/env bash
# Configures and builds the sanitized build in build-asan/: clang, AddressSanitizer + UBSan in
# every target, libFuzzer's coverage instrumentation in every library (CODA_FUZZ), the tests and
# the fuzz targets, -O1 with line tables (fast enough for the suite, stack traces with lines).
# scripts/test_sanitizers.sh runs the tests from it and bench/fuzz.sh the fuzz targets, so CI
# compiles coda once for both.
#
#   scripts/sanitized_build.sh                 # everything
#   scripts/sanitized_build.sh fuzz_targets    # only these ninja targets
set -euo pipefail
cd "$(dirname "$0")/.."

source scripts/packages.sh
scripts/ensure_packages.sh "${CODA_BUILD_PACKAGES[@]}" clang libclang-rt-14-dev

build=build-asan
cmake -S . -B "$build" -G Ninja -DCMAKE_CXX_COMPILER=clang++ -DCODA_SANITIZE=ON -DCODA_FUZZ=ON \
  -DCODA_BUILD_BENCH=OFF -DCMAKE_BUILD_TYPE=Debug \
  -DCMAKE_CXX_FLAGS_DEBUG="-O1 -gline-tables-only" >/dev/null
if ! ninja -C "$build" -j "$(nproc)" "$@" >"$build/build.log" 2>&1; then
  tail -n 200 "$build/build.log" >&2
  echo "sanitized_build.sh: the build failed (whole log: $build/build.log)" >&2
  exit 1
fi
