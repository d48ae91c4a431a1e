#!/usr/bin/env bash
# Configures coda against Debian 12's FindCUDAToolkit as Debian ships it (CMake 3.25.1), which
# fails with CUDA 12.9+ ("set_property could not find TARGET CUDA::nvToolsExt") in projects that
# require CMake 3.25, unless the project works around it (validation/CMakeLists.txt). Some
# machines carry a patched module; this rebuilds the stock one from the installed copy by undoing
# the patch's guard, so CI checks the configure a user's machine does. Configure only (~20 s).
# Skipped, saying so, without a CUDA compiler or without CMake 3.25's module.
set -euo pipefail
cd "$(dirname "$0")/.."
nvcc="${CUDACXX:-/usr/local/cuda/bin/nvcc}"
module=/usr/share/cmake-3.25/Modules/FindCUDAToolkit.cmake
if [[ ! -x "$nvcc" ]] || [[ ! -f "$module" ]]; then
  echo "check_stock_cuda_module: skipped (no CUDA compiler at $nvcc or no $module)"
  exit 0
fi
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/modules"
# Debian's 3.25.1 module guards nothing: "if(CMAKE_MINIMUM_REQUIRED_VERSION ...)"; its includes
# name files beside it, which stay in the system folder.
sed -e 's/if(TARGET CUDA::nvToolsExt AND CMAKE_MINIMUM_REQUIRED_VERSION/if(CMAKE_MINIMUM_REQUIRED_VERSION/' \
    -e "s|\${CMAKE_CURRENT_LIST_DIR}|$(dirname "$module")|g" "$module" > "$work/modules/FindCUDAToolkit.cmake"
if ! cmake -S . -B "$work/build" -G Ninja -DCMAKE_MODULE_PATH="$work/modules" \
      -DCMAKE_CUDA_COMPILER="$nvcc" -DCODA_BUILD_TESTS=OFF -DCODA_BUILD_BENCH=OFF -DCODA_WITH_VEGA=OFF \
      > "$work/configure.log" 2>&1; then
  cat "$work/configure.log" >&2
  echo "check_stock_cuda_module: configuring against the stock FindCUDAToolkit failed" >&2
  exit 1
fi
grep -q "^CODA_CUDA:BOOL=ON" "$work/build/CMakeCache.txt" || {
  echo "check_stock_cuda_module: configured, but without the CUDA part" >&2
  exit 1
}
echo "check_stock_cuda_module: configured with CUDA against the stock FindCUDAToolkit"
