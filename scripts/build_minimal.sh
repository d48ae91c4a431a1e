#!/usr/bin/env bash
# Compiles coda in its minimal configuration, in build-minimal/: without MPI (CODA_WITH_MPI=OFF),
# without the ONNX importer (CODA_WITH_ONNX=OFF) and without the report's chart libraries
# (CODA_WITH_VEGA=OFF), so the code paths that stand in for them (cli/sweep_command.cpp's "built
# without MPI", coda workload's "built without ONNX", reports/vega_bundle_none.cpp) keep compiling
# and linking. Every other build has them on whenever their packages are installed, so nothing
# else builds these paths. Compile only: no tests, no benchmarks, no CUDA; just the libraries the
# `coda` binary links and the binary itself.
#
# -O0 without debug info: this build checks that the code compiles (warnings are errors) and
# links, which needs no optimiser; it cuts the compile time by about a quarter (267 s of CPU
# against 371 s at the README build's -O2). The same sources with MPI and ONNX on are built at
# -O2 by scripts/setup.sh. From clean on a 2-core machine it took 4 min 13 s (with another build
# sharing the cores).
#
#   scripts/build_minimal.sh            # configure build-minimal/ and build the coda target
set -euo pipefail
cd "$(dirname "$0")/.."

source scripts/packages.sh
scripts/ensure_packages.sh "${CODA_BUILD_PACKAGES[@]}"

build="build-minimal"
cmake -S . -B "$build" -G Ninja -DCODA_WITH_MPI=OFF -DCODA_WITH_ONNX=OFF -DCODA_WITH_VEGA=OFF \
  -DCODA_BUILD_TESTS=OFF -DCODA_BUILD_BENCH=OFF -DCODA_CUDA=OFF \
  -DCMAKE_BUILD_TYPE=Debug -DCMAKE_CXX_FLAGS_DEBUG=-O0 >/dev/null
if ! ninja -C "$build" -j "$(nproc)" coda >"$build/build.log" 2>&1; then
  tail -n 200 "$build/build.log" >&2
  echo "build_minimal.sh: the build failed (whole log: $build/build.log)" >&2
  exit 1
fi
echo "build_minimal.sh: $build/coda built without MPI and ONNX"
