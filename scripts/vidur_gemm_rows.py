#!/usr/bin/env python3
"""Writes GEMM rows of the published corpus (validation/published/README.md schema) from the compute
profiles Microsoft's Vidur ships (data/profiling/compute/<gpu>/<model>/mlp.csv): the four linear
layers of a transformer block (QKV, attention output, MLP up with its gate, MLP down) as Vidur timed
them on A100 and H100, fp16, at a few token counts and tensor-parallel widths.

    python3 scripts/vidur_gemm_rows.py VIDUR_GIT_DIR COMMIT GPU >> validation/published/gpu/vidur_profiling_GPU.csv

VIDUR_GIT_DIR is a git directory of microsoft/vidur (coda's `fetch` tool brings one); the rows
are read with `git show COMMIT:path`, so the file and commit each row cites are the ones read.
What the timing is (vidur/profiling/mlp/mlp_wrapper.py and utils/record_function_tracer.py @
7d475133, the default --profile_method record_function): one forward pass through a model of 20
such blocks, each layer's time the summed GPU durations of the kernels launched inside its
torch.profiler record_function range (no host or launch time), and the row's median over the 20
blocks (each block its own weights, so they come from DRAM). Nothing is fitted or computed here
beyond the shapes and ms -> us.
"""
import csv
import io
import subprocess
import sys

MODELS = [  # (Vidur's folder, [tensor-parallel widths])
    ("meta-llama/Llama-2-7b-hf", [1]),
    ("meta-llama/Llama-2-70b-hf", [1, 8]),
]
TOKENS = [16, 128, 512, 2048, 4096]
DEVICE = {
    "a100": "A100 80GB (Vidur 'a100': the A100 DGX of its profiles, 80GB A100s; SXM4 variant not stated)",
    "h100": "H100 (Vidur 'h100': the H100 DGX of its profiles; variant not stated)",
}


def main():
    git_dir, commit, gpu = sys.argv[1], sys.argv[2], sys.argv[3]
    out = csv.writer(sys.stdout, lineterminator="\n")
    for model, tps in MODELS:
        path = f"data/profiling/compute/{gpu}/{model}/mlp.csv"
        text = subprocess.check_output(["git", "--git-dir", git_dir, "show", f"{commit}:{path}"],
                                       text=True)
        rows = list(csv.DictReader(io.StringIO(text)))
        for tp in tps:
            for tokens in TOKENS:
                # The first row of this (tokens, tp): the 4096-token profiles hold two.
                found = [(i, r) for i, r in enumerate(rows)
                         if int(r["num_tokens"]) == tokens and int(r["num_tensor_parallel_workers"]) == tp]
                if not found:
                    continue
                index, r = found[0]
                line = index + 2  # the header is line 1
                h, e = int(r["n_embd"]), int(r["n_expanded_embd"])
                heads, kv_heads = int(r["n_head"]), int(r["n_kv_head"])
                head_dim = h // heads
                gated = r["use_gated_mlp"] == "True"
                # vidur/profiling/mlp/mlp_impl.py: ColumnParallelLinear splits the output features,
                # RowParallelLinear the input features, over the tp workers; the gated up projection
                # is one GEMM of 2 x mlp_hidden_dim outputs (gate and up).
                shapes = {
                    "attn_pre_proj": ((heads + 2 * kv_heads) * head_dim // tp, h,
                                      f"(n_head + 2 n_kv_head) x head_dim / tp = ({heads} + 2 x {kv_heads}) x {head_dim} / {tp}"),
                    "attn_post_proj": (h, heads * head_dim // tp, f"k = n_head x head_dim / tp = {heads} x {head_dim} / {tp}"),
                    "mlp_up_proj": ((2 if gated else 1) * e // tp, h,
                                    f"n = {'2 x ' if gated else ''}n_expanded_embd / tp = {'2 x ' if gated else ''}{e} / {tp}"),
                    "mlp_down_proj": (h, e // tp, f"k = n_expanded_embd / tp = {e} / {tp}"),
                }
                for op, (n, k, how) in shapes.items():
                    ms_text = r[f"time_stats.{op}.median"]
                    ms = float(ms_text)
                    lo, hi = float(r[f"time_stats.{op}.min"]), float(r[f"time_stats.{op}.max"])
                    out.writerow([
                        "gemm", "fp16", f"m={tokens} n={n} k={k}", "", "", f"{ms * 1000:.4g}",
                        DEVICE[gpu],
                        "Vidur MLP profiler (vidur/profiling/mlp: Sarathi-Serve's ColumnParallelLinear/"
                        "RowParallelLinear, torch.nn.functional.linear = cuBLAS, fp16, eval mode); "
                        "torch/CUDA versions not stated",
                        f"microsoft/vidur {path} @ {commit}, line {line} ({model.split('/')[1]}, "
                        f"num_tokens {tokens}, num_tensor_parallel_workers {tp}), column "
                        f"time_stats.{op}.median",
                        f"median_us = time_stats.{op}.median (ms) x 1000 = {ms_text} x 1000; m = num_tokens; "
                        f"{how}",
                        f"{op} of {model.split('/')[1]} (n_embd {h}, n_expanded_embd {e}, gated "
                        f"{gated}); GPU kernel durations inside the layer's record_function range from "
                        "a torch.profiler trace (no host or launch time), median over the 20 blocks of "
                        f"one forward (min {lo * 1000:.4g} us, max {hi * 1000:.4g} us); each block its own "
                        "weights"])


if __name__ == "__main__":
    main()
