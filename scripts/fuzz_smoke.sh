#!/usr/bin/env bash
# CI: builds the fuzz targets and runs each for about 5 seconds (bench/fuzz.sh does the work).
set -euo pipefail
cd "$(dirname "$0")/.."
exec bench/fuzz.sh "${1:-5}"
