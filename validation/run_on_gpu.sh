#!/usr/bin/env bash
# Measures coda's bundled CUDA kernels on this machine's GPU 0, in one go, in under 8 minutes on
# one H200 (docs/validation.md):
#
#   validation/run_on_gpu.sh                  # results in validation/out/<UTC date>/
#   OUT=/some/dir validation/run_on_gpu.sh    # results in /some/dir
#   CASES=validation/cases/smoke.yaml validation/run_on_gpu.sh   # another case list
#   JOBS=1 validation/run_on_gpu.sh           # build with one job (default: nproc)
#   CODA_BENCH=DIR/coda-bench validation/run_on_gpu.sh   # a coda-bench built elsewhere (no build)
#
# A machine that cannot install packages (no network) runs a coda-bench built on another machine
# with the same CUDA major version: CODA_BENCH names it, CODA_LIBS a folder of the shared libraries
# it needs that this machine lacks (libyaml-cpp, libfmt); CUDA libraries that are not on the
# loader's path are looked for under /usr/local and /opt (PyTorch's wheels carry cuBLAS and cuDNN).
# CODA_GPU_TESTS names a validation_gpu_tests binary to run too (its log: gpu_tests.log).
#
# Steps and their time limits (the whole run stops by BUDGET_S, default 470 s, under 8 minutes):
#   1. packages   the Debian -dev packages the build needs, installed only if missing  (< 2 x 90 s)
#   2. build      coda-bench with nvcc for sm_80 and sm_90, on every core               (< 240 s)
#   3. device     nvidia-smi -q into the output folder                                  (< 10 s)
#   4. measure    the case list -> measurements.csv (~2 min expected on one H200)      (< 330 s)
#   5. ncu        where ncu exists and may read counters: DRAM bytes, tensor-pipe utilisation,
#                 occupancy, shared-memory bank conflicts and wavefronts, L2 bytes and registers
#                 per kernel of validation/cases/ncu.yaml -> ncu_metrics.csv (< 150 s)
#   6. gpu tests  CODA_GPU_TESTS, when given -> gpu_tests.log                          (< 60 s)
#   7. torch      where python3 has PyTorch and Triton (TORCH_BENCH=0 skips it): library kernels
#                 (cuBLAS, FlashAttention-2 and cuDNN attention, norms, copies) through
#                 validation/torch_bench.py -> torch_raw.csv, torch_corpus.csv,
#                 torch_l2_probe.csv (the L2 flush's cost on a few memory-bound calls) (< TORCH_S, 150 s)
#   8. train      where python3 has PyTorch and a GPU (TRAIN_BENCH=0 skips it): whole GPT-2
#                 training steps, eager and from a CUDA graph, with their kernel profiles, through
#                 validation/torch_train_bench.py -> torch_train_corpus.csv, torch_train_raw.csv,
#                 torch_train_kernels.csv                                           (< TRAIN_S, 170 s)
# Steps 7 and 8 run under nvidia-smi sampling the SM clock and power every 200 ms
# (nvidia-smi-samples.csv).
# Steps 4 and 5 get at most what is left of BUDGET_S (step 4 keeps 60 s back for step 5); steps 6
# to 8 have their own limits on top of it (about 2 minutes each on one H200).
# Expected on one H200 with the packages present: build ~1.5 min, measure ~2 min, ncu ~1 min.
# Everything it writes goes to the output folder; the build goes to build-gpu/ (git-ignored).
# Exit status: 0 all measured cases passed, 1 some case failed its check or did not run, 2 the
# machine cannot run this (no GPU, no nvcc, packages missing and not installable), 3 the build
# failed.
set -euo pipefail
cd "$(dirname "$0")/.."

start=$(date +%s)
out="${OUT:-validation/out/$(date -u +%Y%m%dT%H%M%SZ)}"
mkdir -p "$out"
cases="${CASES:-validation/cases/default.yaml}"
build_dir="${CODA_GPU_BUILD_DIR:-build-gpu}"
deadline=$(( start + ${BUDGET_S:-470} ))
nvcc=/usr/local/cuda/bin/nvcc

log() { echo "[run_on_gpu +$(( $(date +%s) - start ))s] $*" | tee -a "$out/run.log" >&2; }
# Seconds left before the deadline, less a reserve, capped at a step's own limit (at least 1).
left() {
  local s=$(( deadline - $(date +%s) - $2 ))
  [ "$s" -gt "$1" ] && s=$1
  [ "$s" -lt 1 ] && s=1
  echo "$s"
}
fail() {
  log "FAILED: $2"
  exit "$1"
}

# --- 0. the machine ---------------------------------------------------------------------------
command -v nvidia-smi >/dev/null || fail 2 "nvidia-smi not found: this machine has no NVIDIA driver"
nvidia-smi -L >/dev/null 2>&1 || fail 2 "nvidia-smi -L failed: no GPU is visible ($(nvidia-smi -L 2>&1 | head -1))"
[ -n "${CODA_BENCH:-}" ] || [ -x "$nvcc" ] ||
  fail 2 "$nvcc not found: install the CUDA toolkit under /usr/local/cuda (or give CODA_BENCH)"
{
  echo "date: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
  echo "host: $(hostname)"
  echo "commit: ${CODA_COMMIT:-$(git rev-parse HEAD 2>/dev/null || echo unknown)}"
  echo "tree: $(git status --porcelain 2>/dev/null | wc -l) changed or untracked paths"
  echo "nvcc: $("$nvcc" --version 2>/dev/null | tail -1)"
  echo "cases: $cases"
  echo "nproc: $(nproc)"
} > "$out/run_info.txt"
log "output in $out"

# The shared libraries a binary needs that the loader cannot find: looked for under /usr/local,
# /opt and /usr/lib and added to LD_LIBRARY_PATH; those still missing are left in missing_libs.
resolve_libs() {
  if [ -n "${CODA_LIBS:-}" ]; then
    export LD_LIBRARY_PATH="${LD_LIBRARY_PATH:+$LD_LIBRARY_PATH:}$(realpath "$CODA_LIBS")"
  fi
  local lib found
  for lib in $(ldd "$1" 2>/dev/null | awk '/not found/ {print $1}'); do
    found=$(find /usr/local /opt /usr/lib -name "$lib" -print -quit 2>/dev/null || true)
    if [ -n "$found" ]; then
      export LD_LIBRARY_PATH="${LD_LIBRARY_PATH:+$LD_LIBRARY_PATH:}$(dirname "$found")"
    fi
  done
  missing_libs=$(ldd "$1" 2>/dev/null | awk '/not found/ {print $1}' | tr '\n' ' ')
}

if [ -n "${CODA_BENCH:-}" ]; then
  bench=$CODA_BENCH
  [ -x "$bench" ] || fail 2 "CODA_BENCH=$bench is not an executable file"
  resolve_libs "$bench"
  [ -z "$missing_libs" ] || fail 2 "$bench needs libraries this machine lacks: $missing_libs(set CODA_LIBS)"
  echo "coda-bench: prebuilt $bench; LD_LIBRARY_PATH=${LD_LIBRARY_PATH:-}" >>"$out/run_info.txt"
  log "using the prebuilt $bench (no package or build step)"
else
# --- 1. packages --------------------------------------------------------------------------------
packages=(cmake ninja-build g++ libyaml-cpp-dev libfmt-dev nlohmann-json3-dev libcli11-dev)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  log "installing missing packages: ${missing[*]}"
  sudo=""
  [ "$(id -u)" -eq 0 ] || sudo="sudo"
  if ! command -v apt-get >/dev/null || { [ -n "$sudo" ] && ! command -v sudo >/dev/null; }; then
    fail 2 "packages missing (${missing[*]}) and apt-get/sudo unavailable: install them first"
  fi
  if ! timeout 90 $sudo apt-get update -qq >>"$out/apt.log" 2>&1 ||
     ! DEBIAN_FRONTEND=noninteractive timeout 90 $sudo apt-get install -y -qq "${missing[@]}" \
       >>"$out/apt.log" 2>&1; then
    fail 2 "apt-get could not install ${missing[*]} (see $out/apt.log): install them first"
  fi
fi

# --- 2. build -----------------------------------------------------------------------------------
log "configuring $build_dir (CUDA architectures 80;90)"
# CODA_WITH_VEGA=OFF: the report's chart libraries come from the npm registry, which the device
# machine cannot reach, and coda-bench does not draw reports.
cmake -S . -B "$build_dir" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCODA_BUILD_TESTS=OFF \
  -DCODA_BUILD_BENCH=OFF -DCODA_WITH_VEGA=OFF -DCODA_CUDA=ON -DCMAKE_CUDA_COMPILER="$nvcc" \
  -DCODA_CUDA_ARCHITECTURES="80;90" >"$out/cmake.log" 2>&1 ||
  fail 3 "cmake failed (see $out/cmake.log)"
log "building coda-bench with ${JOBS:-$(nproc)} jobs"
timeout 240 cmake --build "$build_dir" -j "${JOBS:-$(nproc)}" --target coda-bench >"$out/build.log" 2>&1 ||
  fail 3 "build failed or took over 240 s (see $out/build.log)"
bench="$build_dir/validation/coda-bench"
log "built $bench"
fi

# The machine code the kernels run (SASS, sm_90) beside the measurements: where a kernel of
# coda-bench comes out far from coda's price (the WMMA GEMM's load chain, the flash kernel's
# shared-memory loads; docs/validation.md), the compiled loads and their dependences decide it.
cuobjdump=$(command -v cuobjdump || true)
[ -z "$cuobjdump" ] && [ -x "$(dirname "$nvcc")/cuobjdump" ] && cuobjdump="$(dirname "$nvcc")/cuobjdump"
if [ -n "$cuobjdump" ]; then
  timeout 60 "$cuobjdump" -sass -arch sm_90 "$bench" 2>"$out/sass.log" | gzip >"$out/coda-bench.sm_90.sass.gz" ||
    log "cuobjdump failed (see $out/sass.log)"
else
  log "cuobjdump not found: no SASS dump"
fi

# --- 3. device ----------------------------------------------------------------------------------
timeout 10 nvidia-smi -q >"$out/nvidia-smi-q.txt" 2>&1 || log "nvidia-smi -q failed (kept its output)"
timeout 10 nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,clocks.mem,\
clocks.max.mem,ecc.mode.current,power.limit,temperature.gpu --format=csv \
  >"$out/nvidia-smi-clocks.csv" 2>&1 || true

# --- 4. measure ---------------------------------------------------------------------------------
measure_s=$(left 330 60)
log "measuring $cases (at most $measure_s s)"
status=0
timeout "$measure_s" "$bench" --cases "$cases" --out "$out/measurements.csv" 2>"$out/coda-bench.log" ||
  status=$?
tail -1 "$out/coda-bench.log" | tee -a "$out/run.log" >&2 || true
case $status in
  0) ;;
  1) log "some cases failed their check or did not run: grep -v ok $out/coda-bench.log" ;;
  124) log "the case list ran over $measure_s s; measurements.csv has the cases that finished" ;;
  *) log "coda-bench exited with $status (see $out/coda-bench.log)" ;;
esac

# --- 5. ncu -------------------------------------------------------------------------------------
ncu=$(command -v ncu || true)
for candidate in /usr/local/cuda/bin/ncu /usr/local/cuda/nsight-compute*/ncu \
                 /opt/nvidia/nsight-compute/*/ncu; do
  [ -z "$ncu" ] && [ -x "$candidate" ] && ncu=$candidate
done
if [ -z "$ncu" ]; then
  log "ncu not found: no counter pass"
  echo "ncu not found on this machine" >"$out/ncu_skipped.txt"
else
  ncu_budget=$(left 150 5)
  ncu_start=$(date +%s)
  metrics="dram__bytes_read.sum,dram__bytes_write.sum"
  # The tensor-pipe metric's name differs across GPUs and ncu versions; take those this one has.
  available=$(timeout 30 "$ncu" --query-metrics 2>/dev/null || true)
  for m in sm__pipe_tensor_op_hmma_cycles_active sm__pipe_tensor_op_imma_cycles_active \
           sm__pipe_tensor_cycles_active sm__inst_executed_pipe_tensor sm__warps_active; do
    if grep -qw -- "$m" <<<"$available"; then
      metrics+=",$m.avg.pct_of_peak_sustained_active"
    fi
  done
  # What slows coda-bench's hand-written kernels (2026-12-06 note: WMMA GEMM, int8 GEMM and the
  # simple flash attention run 4x to 18x below what their tiling prices): shared-memory bank
  # conflicts and wavefronts of their loads and stores, L2 traffic, registers a thread.
  for m in l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld \
           l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st \
           l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld lts__t_bytes; do
    if grep -qw -- "$m" <<<"$available"; then
      metrics+=",$m.sum"
    fi
  done
  if grep -qw -- launch__registers_per_thread <<<"$available"; then
    metrics+=",launch__registers_per_thread"
  fi
  echo "metrics: $metrics" >>"$out/run_info.txt"
  ncu_cases=validation/cases/ncu.yaml
  mapfile -t labels < <("$bench" --cases "$ncu_cases" --list)
  : >"$out/ncu_metrics.csv"
  for i in "${!labels[@]}"; do
    if [ $(( $(date +%s) - ncu_start )) -gt $(( ncu_budget - 20 )) ]; then
      log "ncu pass stopped at its $ncu_budget s budget after $i cases"
      break
    fi
    raw="$out/ncu_case_$((i + 1)).log"
    timeout 60 "$ncu" --csv --metrics "$metrics" "$bench" --cases "$ncu_cases" \
      --only-case $((i + 1)) --repetitions 1 --warmup 0 --out /dev/null >"$raw" 2>&1 || true
    if grep -q "ERR_NVGPUCTRPERM" "$raw"; then
      log "ncu may not read the GPU's counters here (ERR_NVGPUCTRPERM): no counter pass"
      echo "ERR_NVGPUCTRPERM: counters not readable (see $raw)" >"$out/ncu_skipped.txt"
      break
    fi
    # ncu's CSV: its header line, then one quoted row per kernel launch and metric. The first
    # header found becomes ours, with the case's label in front of every row.
    if [ ! -s "$out/ncu_metrics.csv" ]; then
      grep -m1 '^"ID"' "$raw" | sed 's|^|"case",|' >"$out/ncu_metrics.csv" || true
    fi
    label=${labels[$i]% (*}          # "gemm_wmma fp16 m=2048 n=2048 k=2048"
    label=${label//\"/\"\"}
    grep '^"' "$raw" | grep -v '^"ID"' | sed "s|^|\"$label\",|" >>"$out/ncu_metrics.csv" || true
  done
  log "ncu pass: $(grep -c '^"' "$out/ncu_metrics.csv" || true) lines in ncu_metrics.csv"
fi

# --- 6. gpu tests --------------------------------------------------------------------------------
if [ -n "${CODA_GPU_TESTS:-}" ]; then
  resolve_libs "$CODA_GPU_TESTS"
  if [ -n "$missing_libs" ]; then
    log "gpu tests not run: $CODA_GPU_TESTS needs $missing_libs"
  else
    log "running $CODA_GPU_TESTS (at most 60 s)"
    timeout 60 "$CODA_GPU_TESTS" >"$out/gpu_tests.log" 2>&1 || log "gpu tests failed (see $out/gpu_tests.log)"
    tail -3 "$out/gpu_tests.log" | tee -a "$out/run.log" >&2 || true
  fi
fi

# --- 7 and 8 under a clock and power sampler ------------------------------------------------------
# The SM and memory clocks, power draw and temperature every 200 ms while the library kernels and the
# whole training steps run (nvidia-smi-samples.csv): what clock a sustained step holds against the
# boost clock single kernels see (coda prices both at one clock; docs/validation.md).
sampler=""
if command -v nvidia-smi >/dev/null 2>&1; then
  nvidia-smi -i 0 --query-gpu=timestamp,clocks.sm,clocks.mem,power.draw,temperature.gpu \
    --format=csv -lms 200 >"$out/nvidia-smi-samples.csv" 2>&1 &
  sampler=$!
fi

# --- 7. torch -------------------------------------------------------------------------------------
if [ "${TORCH_BENCH:-1}" != 0 ] && python3 -c "import torch, triton; assert torch.cuda.is_available()" \
     >/dev/null 2>&1; then
  torch_s=${TORCH_S:-150}
  log "torch bench (at most $torch_s s)"
  CODA_COMMIT=${CODA_COMMIT:-$(git rev-parse HEAD 2>/dev/null || echo unknown)} timeout $(( torch_s + 30 )) \
    python3 validation/torch_bench.py --out "$out" --budget-s "$torch_s" 2>"$out/torch_bench.log" ||
    log "torch bench exited with $? (see $out/torch_bench.log)"
  tail -1 "$out/torch_bench.log" | tee -a "$out/run.log" >&2 || true
else
  log "no python3 with PyTorch, Triton and a GPU (or TORCH_BENCH=0): no torch bench"
fi

# --- 8. training steps ----------------------------------------------------------------------------
if [ "${TRAIN_BENCH:-1}" != 0 ] && python3 -c "import torch; assert torch.cuda.is_available()" \
     >/dev/null 2>&1; then
  train_s=${TRAIN_S:-170}
  log "training-step bench (at most $train_s s)"
  CODA_COMMIT=${CODA_COMMIT:-$(git rev-parse HEAD 2>/dev/null || echo unknown)} timeout $(( train_s + 60 )) \
    python3 validation/torch_train_bench.py --out "$out" --budget-s "$train_s" \
    2>"$out/torch_train_bench.log" || log "training-step bench exited with $? (see $out/torch_train_bench.log)"
  tail -1 "$out/torch_train_bench.log" | tee -a "$out/run.log" >&2 || true
else
  log "no python3 with PyTorch and a GPU (or TRAIN_BENCH=0): no training-step bench"
fi

[ -n "$sampler" ] && kill "$sampler" 2>/dev/null || true
log "done in $(( $(date +%s) - start )) s; results in $out"
exit $(( status == 0 ? 0 : 1 ))
