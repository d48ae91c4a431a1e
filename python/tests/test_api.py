"""Tests of coda's Python API (python/coda): values derived by hand (the derivations beside them)
or the `coda` command's own output for the same inputs. Run from the repository top with
PYTHONPATH=build/python (CTest's python.api does both)."""

import json
import os
import subprocess
import sys

import pytest

import coda

OS_32 = "configs/arch/scalesim_32x32_os.yaml"
H100 = "configs/arch/nvidia_h100_sxm.yaml"
RESNET18 = "configs/workloads/resnet18.yaml"
QUICK_SWEEP = "configs/sweeps/quick_array_sram_bw.yaml"


def coda_binary():
    return os.path.join(os.environ.get("CODA_BINARY_DIR", "build"), "coda")


def conv1_compute_cycles(run):
    op = next(op for op in run.ops if op["name"] == "conv1")
    return op["cost"]["compute_cycles"]


def test_run_prices_conv1_as_derived_by_hand():
    # conv1 of ResNet-18: 224x224x3, 7x7/2, pad 3, 64 filters -> 112x112: M' = 12544 output
    # pixels, N' = 64 filters, K' = 7*7*3 = 147. Output stationary on 32x32: ceil(12544/32) = 392
    # row folds x ceil(64/32) = 2 column folds, each K' + rows + cols - 2 = 147 + 32 + 32 - 2 =
    # 209 cycles: 392 * 2 * 209 = 163,856 (sim/tests/driver_test.cpp derives the same).
    run = coda.run(coda.Arch.load(OS_32), coda.Workload.file(RESNET18))
    assert len(run.ops) == 21
    assert conv1_compute_cycles(run) == 163_856


def test_with_values_edits_the_arch_a_run_sees():
    # The same conv1 on 64x64: 12544/64 = 196 row folds x 1 column fold, each
    # 147 + 64 + 64 - 2 = 273 cycles: 196 * 273 = 53,508.
    base = coda.Arch.load(OS_32)
    big = base.with_values({"array.rows": 64, "array.cols": 64})
    assert big.get("array.rows") == "64"
    assert base.get("array.rows") == "32"  # the original is unchanged
    assert conv1_compute_cycles(coda.run(big, coda.Workload.file(RESNET18))) == 53_508


def test_a_saved_arch_runs_in_the_command_as_in_python(tmp_path):
    edited = coda.Arch.load(OS_32).with_values({"array.rows": 64, "array.cols": 64})
    edited.save(tmp_path / "arch.yaml")
    out = tmp_path / "run"
    subprocess.run([coda_binary(), "run", "--arch", str(tmp_path / "arch.yaml"), "--workload",
                    RESNET18, "--out", str(out), "--quiet"], check=True)
    command = json.loads((out / "run.json").read_text())
    python = coda.run(edited, coda.Workload.file(RESNET18)).data
    assert command["total"] == python["total"]
    assert [op["cost"] for op in command["ops"]] == [op["cost"] for op in python["ops"]]


def test_run_equals_the_command_on_an_llm(tmp_path):
    # LLaMA-2-7B decode on H100 in bf16: the command's run.json and the API's must agree exactly.
    out = tmp_path / "run"
    subprocess.run([coda_binary(), "run", "--arch", H100, "--llm",
                    "configs/workloads/llm/llama2_7b.yaml", "--phase", "decode", "--batch", "8",
                    "--seq", "2048", "--precision", "bf16", "--out", str(out), "--quiet"],
                   check=True)
    command = json.loads((out / "run.json").read_text())
    workload = coda.Workload.llm("configs/workloads/llm/llama2_7b.yaml", phase="decode", batch=8,
                                 seq=2048)
    run = coda.run(coda.Arch.load(H100), workload, precision="bf16")
    assert run.data["total"] == command["total"]
    assert run.data["seconds"] == command["seconds"]
    assert len(run.layers()) == len(command["ops"])


def test_workload_summary_counts_resnet18_as_torchvision_does():
    # torchvision's ResNet-18 at 224x224: 1.814 GMACs (1,814,073,344, the count
    # workloads/onnx/tests/exported_models_test.cpp checks on the exported model).
    summary = coda.Workload.cnn("resnet18").summary()
    assert summary["macs"] == 1_814_073_344
    assert summary["op_list"][0]["kind"] == "contraction"


def test_a_misspelt_arch_path_raises_with_a_suggestion():
    arch = coda.Arch.load(H100)
    with pytest.raises(coda.CodaError) as caught:
        arch.get("dram.bandwith")
    d = caught.value.diagnostics[0]
    assert d.path == "dram.bandwith"
    assert "did you mean 'bandwidth'?" in d.hint


def test_a_bad_value_raises_naming_the_path_it_was_set_at():
    with pytest.raises(coda.CodaError) as caught:
        coda.Arch.load(H100).with_values({"dram.bandwidth": "fast"})
    d = caught.value.diagnostics[0]
    assert (d.file, d.path) == ("coda.Arch.with_values", "dram.bandwidth")
    assert "4.8 TB/s" in d.message  # what a valid bandwidth looks like


def test_a_bad_workload_key_raises_located_in_its_description():
    workload = coda.Workload.llm("configs/workloads/llm/llama2_7b.yaml", phase="decode", seq=128,
                                 batchh=2)
    with pytest.raises(coda.CodaError) as caught:
        workload.summary()
    d = caught.value.diagnostics[0]
    assert (d.file, d.path) == ("coda.Workload", "batchh")
    assert d.line == 1 and d.column > 1  # where the key stands in the entry's text
    assert "did you mean 'batch'?" in d.message


def test_a_missing_arch_file_raises():
    with pytest.raises(coda.CodaError) as caught:
        coda.Arch.load("configs/arch/no_such_arch.yaml")
    assert "no_such_arch.yaml" in str(caught.value)


def test_a_bad_run_option_raises():
    with pytest.raises(coda.CodaError) as caught:
        coda.run(coda.Arch.load(H100), coda.Workload.cnn("resnet18"), precision="bf17")
    assert caught.value.diagnostics[0].path == "precision"


def test_sweep_runs_every_point_and_resumes(tmp_path):
    # The quick sweep has 4 axes of 3 values each (configs/sweeps/quick_array_sram_bw.yaml) and
    # one workload: 3^4 = 81 points.
    first = coda.sweep(QUICK_SWEEP, out=tmp_path, threads=2)
    assert first.outcome["points"] == 81 and first.outcome["ran"] == 81
    assert len(first.rows) == 81
    again = coda.sweep(QUICK_SWEEP, out=tmp_path, threads=2)
    assert again.outcome["already_done"] == 81 and again.outcome["ran"] == 0
    assert again.rows == first.rows
    assert json.loads((tmp_path / "results.json").read_text()) == first.results
    # The same points in the command's export (coda sweep --out DIR reuses this store).
    subprocess.run([coda_binary(), "sweep", QUICK_SWEEP, "--out", str(tmp_path)], check=True,
                   capture_output=True)
    assert json.loads((tmp_path / "results.json").read_text())["results"] == first.rows


def test_validate_prices_the_edge_corpus_as_the_command_does(tmp_path):
    corpus = "validation/published/edge/corpus_edge.yaml"
    result = coda.validate(corpus)
    subprocess.run([coda_binary(), "validate", "--corpus", corpus, "--out", str(tmp_path)],
                   check=True, capture_output=True)
    command = json.loads((tmp_path / "corpus.json").read_text())
    assert result.rows == command["rows"]
    assert len(result.rows) == 32  # the manifest's rows, 20 validation and 12 calibration


def test_map_finds_a_mapping_for_every_contraction():
    mapped = coda.map(coda.Arch.load(OS_32), coda.Workload.file(RESNET18))
    assert len(mapped) == 21  # ResNet-18's 20 convolutions and its fully connected layer
    assert all(m["mapped"] and m["valid"] > 0 for m in mapped)


def test_dataframes_when_pandas_is_installed():
    pytest.importorskip("pandas")
    run = coda.run(coda.Arch.load(OS_32), coda.Workload.file(RESNET18))
    layers = run.layers_df()
    assert list(layers["layer"])[:1] == ["conv1"]
    assert layers["cycles"].sum() == run.data["total"]["cycles"]
    frame = coda.sweep(QUICK_SWEEP, threads=2).results_df()
    assert len(frame) == 81
    assert "dram.bandwidth" in frame.columns and "latency_s" in frame.columns
    assert sorted(frame["array.rows"].unique()) == [64, 128, 256]  # numbers, not text


def test_the_notebook_example_runs():
    # examples/edge_npu_llama_decode.py as a user runs it (this python3, this PYTHONPATH); its
    # sweep goes into results/python_example, which a second run reuses.
    done = subprocess.run([sys.executable, "examples/edge_npu_llama_decode.py"], check=True,
                          capture_output=True, text=True)
    assert "fastest feasible design" in done.stdout


SERVE = dict(rate=4, requests=200, input_len=512, output_len=128, slo_ttft=2000, slo_tpot=100)


def test_serve_equals_the_command(tmp_path):
    llm = "configs/workloads/llm/llama2_7b.yaml"
    served = coda.serve(coda.Arch.load(H100), llm=llm, **SERVE)
    subprocess.run([coda_binary(), "serve", "--arch", H100, "--llm", llm, "--rate", "4",
                    "--requests", "200", "--input-len", "512", "--output-len", "128",
                    "--slo-ttft", "2000", "--slo-tpot", "100", "--out", str(tmp_path)],
                   check=True, capture_output=True)
    command = json.loads((tmp_path / "serve.json").read_text())
    assert served.serve["summary"] == command["summary"]
    assert len(served.requests) == 200
    # Each request's TTFT is its first token's time less its arrival (docs/serving.md); the CSV
    # writes 9 significant digits, so times near 50 s carry 0.1 us of rounding.
    for r in served.requests:
        assert r["ttft_s"] == pytest.approx(r["first_token_s"] - r["arrival_s"], abs=1e-6)


def test_serve_runs_an_edited_arch_and_reports_the_command_errors():
    llm = "configs/workloads/llm/llama2_7b.yaml"
    h100 = coda.Arch.load(H100)
    # Half the HBM bandwidth: decode reads the weights every step, so tokens come slower.
    slow = coda.serve(h100.with_values({"dram.bandwidth": "1.675 TB/s"}), llm=llm, **SERVE)
    fast = coda.serve(h100, llm=llm, **SERVE)
    assert slow.serve["summary"]["tpot_s"]["p50"] > fast.serve["summary"]["tpot_s"]["p50"]
    # 1 GB of HBM cannot hold LLaMA-2-7B's 12.55 GiB of bf16 weights.
    with pytest.raises(coda.CodaError) as caught:
        coda.serve(h100.with_values({"dram.capacity": "1 GB"}), llm=llm, **SERVE)
    assert caught.value.diagnostics[0].path == "serve"
    assert "no room for a KV cache" in caught.value.diagnostics[0].message


def test_train_equals_the_command(tmp_path):
    llm = "configs/workloads/llm/gpt2_small.yaml"
    step = coda.train(coda.Arch.load(H100), llm=llm, seq=1024, micro_batch_size=8,
                      global_batch=8)
    out = tmp_path / "train.json"
    subprocess.run([coda_binary(), "train", "--arch", H100, "--llm", llm, "--seq", "1024",
                    "--micro-batch-size", "8", "--global-batch", "8", "--json", str(out)],
                   check=True, capture_output=True)
    assert step == json.loads(out.read_text())


def test_train_takes_context_parallelism_and_fp8():
    # cp 2 x dp 4 on 8 chips: the report's layout says so, and the same step in bf16 (mixed) has
    # the same layout and a longer step (the GEMMs of 1024-token halves of 8 sequences in FP8).
    llm = "configs/workloads/llm/llama2_7b.yaml"
    fp8 = coda.train(coda.Arch.load(H100), llm=llm, seq=2048, cp=2, dp=4, global_batch=8,
                     zero=1, train_precision="fp8")
    mixed = coda.train(coda.Arch.load(H100), llm=llm, seq=2048, cp=2, dp=4, global_batch=8,
                       zero=1)
    fp8, mixed = fp8["training_step"], mixed["training_step"]
    assert fp8["layout"]["cp"] == 2 and fp8["layout"]["chips"] == 8
    assert fp8["framework"]["precision"] == "fp8"
    assert fp8["step_s"] < mixed["step_s"]


def test_train_takes_expert_parallelism():
    # Qwen3-30B-A3B on 8 chips, dp 8: with ep 8 each chip holds 1/8 of the routed experts, so its
    # weights take less memory; the layout says so.
    llm = "configs/workloads/llm/qwen3_30b_a3b.yaml"
    ep8 = coda.train(coda.Arch.load(H100), llm=llm, seq=256, dp=8, ep=8, global_batch=8, zero=1)
    ep1 = coda.train(coda.Arch.load(H100), llm=llm, seq=256, dp=8, global_batch=8, zero=1)
    ep8, ep1 = ep8["training_step"], ep1["training_step"]
    assert ep8["layout"]["ep"] == 8 and ep1["layout"]["ep"] == 1
    weights = lambda step: step["stages"][0]["memory"]["weights_bytes"]
    assert weights(ep8) < weights(ep1) / 5


def test_report_draws_a_sweep_and_a_run(tmp_path):
    coda.sweep(QUICK_SWEEP, out=tmp_path / "sweep", threads=2)
    coda.run(coda.Arch.load(OS_32), coda.Workload.file(RESNET18)).save(tmp_path / "run")
    page = coda.report(tmp_path / "sweep", tmp_path / "run" / "run.json", out=tmp_path / "report")
    assert os.path.getsize(page) > 10_000
    assert "Pareto" in open(page, encoding="utf-8").read()
