# The Debian packages coda's build and tests need, in one place; sourced by the scripts that
# install them (setup.sh, test_sanitizers.sh, lint.sh, bench/fuzz.sh).
# shellcheck disable=SC2034  # used by the scripts that source this file
CODA_BUILD_PACKAGES=(cmake ninja-build g++ pkg-config libyaml-cpp-dev libfmt-dev
                     nlohmann-json3-dev libcli11-dev libgtest-dev libgmock-dev libbenchmark-dev
                     libonnx-dev libprotobuf-dev libsqlite3-dev python3-onnx python3-numpy
                     libsystemc-dev gnuplot-nox chromium libpng-dev libeigen3-dev
                     openmpi-bin libopenmpi-dev libboost-dev
                     pybind11-dev python3-dev python3-pytest
                     npm)  # the report's chart libraries (web/package.json), installed by npm ci
# Optional: the Python API gives DataFrames where pandas is installed, and its tests of them skip
# where it is not. CI installs it (with the list above, so apt-get update runs once); setup does
# not, as 65 packages is a lot to ask of a first run.
CODA_PYTHON_EXTRAS=(python3-pandas)
