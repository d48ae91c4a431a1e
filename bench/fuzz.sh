#!/usr/bin/env bash
# Builds the libFuzzer targets (fuzz/) in the sanitized build, build-asan/ (clang, ASan + UBSan;
# scripts/sanitized_build.sh), and runs each one for SECONDS_PER_TARGET seconds (default 60) on a
# scratch copy of its seed corpus, so the committed corpus in fuzz/corpus/ never grows by itself. Prints executions per target; exits non-zero if
# any target found a crash, a leak or a timeout (its input is saved under build-asan/fuzz-out/).
#
#   bench/fuzz.sh          # 60 s per target
#   bench/fuzz.sh 300      # 5 minutes per target
#   FUZZ_TARGETS="units_fuzz" bench/fuzz.sh 30
set -euo pipefail
cd "$(dirname "$0")/.."
top=$(pwd)
seconds="${1:-60}"
targets=(${FUZZ_TARGETS:-units_fuzz arch_yaml_fuzz layer_list_fuzz scalesim_csv_fuzz trace_fuzz
                        hf_config_fuzz onnx_fuzz sweep_spec_fuzz case_list_fuzz
                        measurement_csv_fuzz stored_results_fuzz sweep_records_fuzz
                        request_trace_fuzz})

# The fuzz targets live in the sanitized build, which the sanitizer tests share.
build=build-asan
scripts/sanitized_build.sh fuzz_targets

out="$top/$build/fuzz-out"
failed=0
printf '%-20s %8s %12s %10s %s\n' target seconds executions exec/s result
for t in "${targets[@]}"; do
  work="$out/$t"
  rm -rf "$work"
  mkdir -p "$work/corpus" "$work/artifacts" "$work/cwd"
  cp -r "fuzz/corpus/$t/." "$work/corpus/"
  # Runs from an empty folder, so an `extends:` the fuzzer writes finds no files of ours.
  status=0
  (cd "$work/cwd" &&
   ASAN_OPTIONS="detect_leaks=1" UBSAN_OPTIONS="print_stacktrace=1" \
   "$top/$build/fuzz/$t" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 \
     -max_len=4096 -print_final_stats=1 -artifact_prefix="$work/artifacts/" "$work/corpus" \
     >"$work/log.txt" 2>&1) || status=$?
  execs=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$work/log.txt" | grep -o '[0-9]*$' || echo "?")
  result=ok
  if [ "$status" -ne 0 ]; then
    result="FAILED (exit $status): see $work/log.txt and $work/artifacts/"
    failed=1
  fi
  rate="?"
  [ "$execs" != "?" ] && rate=$((execs / (seconds > 0 ? seconds : 1)))
  printf '%-20s %8s %12s %10s %s\n' "$t" "$seconds" "$execs" "$rate" "$result"
done
exit $failed
