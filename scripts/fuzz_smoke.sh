#!/usr/bin/env bash
# CI: builds the fuzz targets and runs each for about 5 seconds (bench/fuzz.sh does the work).
# onnx_fuzz is back in since the importer checks conv, pool and Split nodes and kept integer
# tensors before libonnx's shape inference, which trusts them (fuzz/known_crashes/ keeps the inputs
# that crashed it, each with a test in workloads/onnx/tests/).
# sweep_spec_fuzz, case_list_fuzz and measurement_csv_fuzz cover the sweep spec, coda-bench's case
# lists and the measurement CSV; stored_results_fuzz the run.json and results.json coda report
# reads; sweep_records_fuzz the decoder of the points an MPI sweep's ranks send to rank 0;
# request_trace_fuzz coda serve's trace CSV and length grammar.
set -euo pipefail
cd "$(dirname "$0")/.."
FUZZ_TARGETS="${FUZZ_TARGETS:-units_fuzz arch_yaml_fuzz layer_list_fuzz scalesim_csv_fuzz trace_fuzz
  hf_config_fuzz onnx_fuzz sweep_spec_fuzz case_list_fuzz measurement_csv_fuzz
  stored_results_fuzz sweep_records_fuzz request_trace_fuzz}" \
  exec bench/fuzz.sh "${1:-5}"
