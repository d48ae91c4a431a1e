#!/usr/bin/env bash
# Sets up coda on Debian 12: installs the Debian packages it needs (only those missing), then
# configures and builds everything into build/. Idempotent: a second run installs nothing and
# rebuilds only what changed.
#
#   scripts/setup.sh              # Release build (-O2, no debug info) in build/
#   BUILD_DIR=build-x scripts/setup.sh -DCMAKE_BUILD_TYPE=Debug   # extra args go to cmake
set -euo pipefail
cd "$(dirname "$0")/.."

source scripts/packages.sh
scripts/ensure_packages.sh "${CODA_BUILD_PACKAGES[@]}"

build_dir="${BUILD_DIR:-build}"
cmake -S . -B "$build_dir" -G Ninja "$@" >/dev/null
cmake --build "$build_dir" -j "$(nproc)"
