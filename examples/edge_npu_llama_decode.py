# %% [markdown]
# # Which array and LPDDR bandwidth for LLaMA-2-7B decode on an edge NPU?
#
# A study in coda's Python API (docs/python.md), in cells a notebook runs one by one (the
# `# %%` markers: VS Code, Jupytext and Spyder open this file as a notebook) or as a script:
#
#     PYTHONPATH=build/python python3 examples/edge_npu_llama_decode.py
#
# from the repository top, after the README's test command has built the module. It asks the
# question of configs/sweeps/edge_npu_llama_decode_5w.yaml by hand: edit the base arch, run the
# model, look at the layers, then run the whole sweep and read its results as a table.

# %%
import coda

npu = coda.Arch.load("configs/sweeps/arch/edge_npu_llm.yaml")
print(npu.summary()["description"])
print("array", npu["compute[0].array.rows"], "x", npu["compute[0].array.cols"],
      "per core; DRAM", npu["dram.bandwidth"])

# %% [markdown]
# One token of LLaMA-2-7B with 2,047 tokens in its KV cache, int8 weights, activations and cache.

# %%
decode = coda.Workload.llm("configs/workloads/llm/llama2_7b.yaml", phase="decode", batch=1,
                           seq=2047, dtype="int8")
size = decode.summary()
print(f"{size['parameters'] / 1e9:.2f} B parameters, {size['macs'] / 1e9:.2f} GMACs per token")

base = coda.run(npu, decode)
print(f"base design: {base.seconds * 1e3:.1f} ms per token")

# %% [markdown]
# Decode reads every weight once per token, so one would expect the DRAM bandwidth to set the
# time and a larger array to buy little. Try it: each edit is a new, validated arch (the base
# stays as it was). On this NPU the table says otherwise: at batch 1 a weight-stationary array
# spends each weight tile's time loading it and filling its pipeline for a single input row, so
# arrays below 64x64 keep decode compute-bound and more bandwidth buys nothing until the array
# grows.

# %%
print(f"{'array':>7} {'DRAM':>12} {'ms/token':>9} {'mJ/token':>9}")
for side in (16, 32, 64):
    for bandwidth in ("25.6 GB/s", "51.2 GB/s", "102.4 GB/s"):
        design = npu.with_values({"compute[0].array.rows": side, "compute[0].array.cols": side,
                                  "dram.bandwidth": bandwidth})
        r = coda.run(design, decode)
        print(f"{side:>4}x{side:<2} {bandwidth:>12} {r.seconds * 1e3:9.1f} "
              f"{r.data['total']['energy_joules'] * 1e3:9.1f}")

# %% [markdown]
# Where the time goes in the base design: the layers table (a DataFrame with pandas installed).

# %%
layers = base.layers()
slowest = sorted(layers, key=lambda row: row["seconds"], reverse=True)[:5]
for row in slowest:
    print(f"{row['layer']:<14} {row['unit']:<8} {row['bound']:<8} {row['seconds'] * 1e3:7.3f} ms")

# %% [markdown]
# The whole question as a sweep: 540 designs, stored so a second call resumes or reuses them.

# %%
study = coda.sweep("configs/sweeps/edge_npu_llama_decode_5w.yaml", out="results/python_example")
print(study.outcome)
feasible = [row for row in study.rows if row["feasible"]]
best = min(feasible, key=lambda row: row["metrics"]["latency_s"])
print("fastest feasible design:", best["values"],
      f"{best['metrics']['latency_s'] * 1e3:.1f} ms per token")
try:
    frame = study.results_df()
    print(frame.groupby("dram.bandwidth")["latency_s"].min())
except ImportError as missing:
    print(missing)
# `coda report results/python_example --out results/python_example/report` draws the charts.
