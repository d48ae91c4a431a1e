#!/usr/bin/env bash
# Sets up coda on Debian 12: installs the Debian packages it needs (only those missing), then
# configures and builds everything into build/. Idempotent: a second run installs nothing and
# rebuilds only what changed.
#
#   scripts/setup.sh              # Release-like build (RelWithDebInfo) in build/
#   BUILD_DIR=build-x scripts/setup.sh -DCMAKE_BUILD_TYPE=Debug   # extra args go to cmake
set -euo pipefail
cd "$(dirname "$0")/.."

packages=(cmake ninja-build g++ pkg-config libyaml-cpp-dev libfmt-dev nlohmann-json3-dev
          libcli11-dev libgtest-dev libgmock-dev libbenchmark-dev
          libonnx-dev libprotobuf-dev python3-onnx python3-numpy)

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  sudo=""
  [ "$(id -u)" -eq 0 ] || sudo="sudo"
  echo "setup: installing ${missing[*]}"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${missing[@]}" >/dev/null
fi

build_dir="${BUILD_DIR:-build}"
cmake -S . -B "$build_dir" -G Ninja "$@" >/dev/null
cmake --build "$build_dir" -j "$(nproc)"
