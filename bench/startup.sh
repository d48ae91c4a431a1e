#!/usr/bin/env bash
# Start-up cost of the coda binary (issue 22, item 4): the median wall time of running a command
# N times, against the same commands with the libraries coda no longer loads at start (libonnx,
# protobuf, Open MPI: coda-onnx.so and coda-mpi.so load them on demand, core/plugin.h) forced in
# with LD_PRELOAD, as a binary linked against them would load them, and against /bin/true (the
# cost of any exec). A reported figure, not a test; both sides are measured in the same run.
#
#   bench/startup.sh                 # 200 runs of each
#   RUNS=50 CODA=build/coda bench/startup.sh
set -euo pipefail
cd "$(dirname "$0")/.."
coda=${CODA:-build/coda}
runs=${RUNS:-200}
[ -x "$coda" ] || { echo "bench/startup.sh: $coda not built (cmake --build build --target coda)" >&2; exit 1; }
# The libraries, as the dynamic loader would find them (ldconfig's cache).
preload=""
for lib in libonnx.so.1 libonnx_proto.so.1 libprotobuf.so.32 libmpi.so.40; do
  path=$(/sbin/ldconfig -p | awk -v l="$lib" '$1 == l {print $NF; exit}')
  [ -n "$path" ] && preload="$preload${preload:+ }$path"
done
python3 - "$coda" "$runs" "$preload" <<'PY'
import os, statistics, subprocess, sys, time
coda, runs, preload = sys.argv[1], int(sys.argv[2]), sys.argv[3]
def median_ms(cmd, env=None):
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env, check=True)
        times.append(time.perf_counter() - start)
    return 1e3 * statistics.median(times)
with_libs = dict(os.environ, LD_PRELOAD=preload)
resnet = [coda, "run", "--arch", "configs/arch/rk3588_npu.yaml", "--cnn", "resnet18", "--dtype", "int8"]
onnx = [coda, "run", "--arch", "configs/arch/rk3588_npu.yaml", "--workload",
        "workloads/onnx/tests/exported/torchvision_resnet18.onnx", "--bind", "batch=1",
        "--dtype", "int8"]
true_ms = median_ms(["/bin/true"])
print(f"{runs} runs each, median wall time; preloaded for the 'as linked' column: {preload or 'none found'}")
print(f"{'command':44} {'coda':>9} {'as linked':>10} {'ratio':>6}")
print(f"{'/bin/true (any exec)':44} {true_ms:8.2f}ms")
for name, cmd in [("coda --version", [coda, "--version"]),
                  ("coda run --cnn resnet18 (RK3588, int8)", resnet),
                  ("coda run torchvision_resnet18.onnx", onnx)]:
    now, linked = median_ms(cmd), median_ms(cmd, with_libs)
    print(f"{name:44} {now:8.2f}ms {linked:9.2f}ms {linked / now:5.2f}x")
PY
