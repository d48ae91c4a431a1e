#!/usr/bin/env bash
# coda against the published corpus (validation/published/: real measurements from papers,
# vendor pages and benchmark repositories, split into a calibration and a validation set by
# source before anything was fitted; SPLIT.md). Prints MAPE, median |error|, Spearman and the
# worst row per split, class, source, arch and kernel, with the presets as committed (their
# calibration: sections hold values fitted on the calibration split alone), and writes every
# row's prediction to results/accuracy/corpus.json.
#
#   bench/accuracy.sh          # the presets as committed: the validation error as it comes out
#   bench/accuracy.sh --fit    # also refit each family of archs on the calibration split and
#                              # report both splits with the refitted knobs (calibration_*.yaml)
#
# Then the same for the edge corpus (validation/published/edge/corpus_edge.yaml: vendor model-zoo
# and MLPerf whole-network latencies on edge NPUs and the Jetson Orin GPU; its own split,
# edge/SPLIT.md), per device (by arch), into results/accuracy/edge/.
#
# Last, the serving corpus (validation/published/serving/: TensorRT-LLM, NIM, MLPerf Inference and
# SGLang/vLLM serving measurements; its own split, serving/SPLIT.md): every row's scenario
# simulated by coda serve's engine (bench/serving_accuracy.cpp), into results/accuracy/serving.csv.
#
# A benchmark, not a test: it asserts nothing. validation/tests/corpus_accuracy_test.cpp holds
# a loose regression bound.
set -euo pipefail
cd "$(dirname "$0")/.."
build="${BUILD_DIR:-build}"
out="${OUT:-results/accuracy}"
cmake --build "$build" --target coda >/dev/null
mkdir -p "$out"
echo "== GPU kernels and LLMs (validation/published/corpus.yaml)"
"$build/coda" validate --corpus validation/published/corpus.yaml --out "$out" "$@"
echo
echo "== edge devices (validation/published/edge/corpus_edge.yaml)"
mkdir -p "$out/edge"
"$build/coda" validate --corpus validation/published/edge/corpus_edge.yaml --out "$out/edge" "$@"
echo
echo "== LLM serving (validation/published/serving/corpus_serving.yaml)"
cmake --build "$build" --target bench_serving_accuracy >/dev/null
OUT="$out" "$build/bench/bench_serving_accuracy" validation/published/serving/corpus_serving.yaml
