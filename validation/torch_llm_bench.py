#!/usr/bin/env python3
"""Times whole LLM steps on this machine's GPU 0 with Hugging Face transformers (eager PyTorch,
random weights of the real shapes) and writes them as rows of the published-corpus schema
(validation/published/README.md), with their provenance.

    python3 validation/torch_llm_bench.py --out DIR [--budget-s 200]

Rows (model = the coda preset in configs/workloads/llm/ whose shapes the HF config copies):
  llm_train    GPT-2 small / medium (GPT2LMHeadModel): one optimizer step per GPU, fp32 master
               weights under bf16 autocast, fused AdamW, dropout 0, no recomputation, one GPU
               (dp 1, tp 1, zero 0, grad_bits 32: gradients stay fp32)
  llm_prefill  LLaMA-2-7B, Llama-3-8B (LlamaForCausalLM, bf16 weights): time to first token, a
               forward over the prompt that fills the KV cache and keeps the last position's
               logits (logits_to_keep=1), then the argmax
  llm_decode   the same models: time per output token, the mean over output_len greedy steps
               after the prompt, each step one forward of one token per sequence over the cache
Timing: CUDA events around each step or loop after warm-up, the median of the repetitions;
kernels launched one by one from Python (launch: eager). The attention is PyTorch's SDPA; the
kernels one step launches (count and attention kernel) go into each row's note.
Outputs in DIR: torch_llm_corpus.csv (the rows) and torch_llm_raw.csv (every case and its error,
if any). Nothing is fitted here.
"""
import argparse
import csv
import os
import statistics
import sys
import time

import torch_bench  # same folder: provenance and kernel-name helpers


timed = torch_bench.cuda_median_us


attention_class = torch_bench.attention_class


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", required=True)
    ap.add_argument("--budget-s", type=float, default=200.0)
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)

    import torch
    import transformers
    from transformers import GPT2Config, GPT2LMHeadModel, LlamaConfig, LlamaForCausalLM

    start = time.time()
    dev = torch.device("cuda:0")
    prov = torch_bench.provenance(torch, f"transformers {transformers.__version__} (eager, "
                                         "attn_implementation sdpa), timed with CUDA events")
    prov["source"] = prov["source"].replace("torch_bench.py", "torch_llm_bench.py")
    rows, raw = [], []

    def record(kernel, dtype, shape, impl, model, us, note, error=""):
        raw.append({"kernel": kernel, "dtype": dtype, "shape": shape, "impl": impl, "model": model,
                    "median_us": "" if us is None else f"{us:.1f}", "note": note, "error": error})
        if us is not None and not error:
            # Every row ran transformers' own modeling code op by op, which coda prices as its
            # hf_transformers runtime (docs/llm.md "Runtimes": LlamaForCausalLM's inference,
            # GPT2LMHeadModel's training step under autocast, docs/training.md).
            runtime = "hf_transformers"
            rows.append({"kernel": kernel, "dtype": dtype, "shape": shape, "impl": impl,
                         "model": model, "launch": "eager", "runtime": runtime,
                         "median_us": f"{us:.1f}",
                         "device": prov["device"], "software": prov["software"],
                         "source": prov["source"], "derivation": "copied (measured)", "note": note})
        print(f"{kernel} {model} {shape}: {us} us {error}", file=sys.stderr)

    def over_budget():
        return time.time() - start > args.budget_s

    # --- training: GPT-2 ----------------------------------------------------------------------
    gpt2 = {"gpt2_small": dict(n_embd=768, n_layer=12, n_head=12),
            "gpt2_medium": dict(n_embd=1024, n_layer=24, n_head=16)}
    for model_name, dims in gpt2.items():
        for batch, seq in ((8, 1024), (16, 1024)):
            shape = f"batch={batch} seq={seq} grad_accum=1 dp=1 recompute=0 tp=1 zero=0 grad_bits=32 autocast=1"
            if over_budget():
                break
            try:
                cfg = GPT2Config(vocab_size=50257, n_positions=1024, resid_pdrop=0.0,
                                 embd_pdrop=0.0, attn_pdrop=0.0, **dims)
                cfg._attn_implementation = "sdpa"
                model = GPT2LMHeadModel(cfg).to(dev)
                opt = torch.optim.AdamW(model.parameters(), lr=1e-4, fused=True)
                ids = torch.randint(0, 50257, (batch, seq), device=dev)

                def step():
                    with torch.autocast("cuda", dtype=torch.bfloat16):
                        loss = model(input_ids=ids, labels=ids).loss
                    loss.backward()
                    opt.step()
                    opt.zero_grad(set_to_none=True)

                us = timed(step, reps=8, warmup=3)
                names = torch_bench.kernel_names(step)
                impl = attention_class(names)
                record("llm_train", "bf16", shape, impl, model_name, us,
                       f"{len(names)} kernels per step (torch.profiler); one GPU; fp32 weights, "
                       f"bf16 autocast, fused AdamW, HF loss over all positions; median of 8 steps "
                       f"after 3 warm-up steps")
                del model, opt
            except Exception as e:  # noqa: BLE001
                record("llm_train", "bf16", shape, "", model_name, None, "",
                       f"{type(e).__name__}: {str(e)[:300]}")
            torch.cuda.empty_cache()

    # --- inference: LLaMA-2-7B, Llama-3-8B ------------------------------------------------------
    llamas = {"llama2_7b": dict(vocab_size=32000, hidden_size=4096, intermediate_size=11008,
                                num_hidden_layers=32, num_attention_heads=32,
                                num_key_value_heads=32, max_position_embeddings=4096),
              "llama3_8b": dict(vocab_size=128256, hidden_size=4096, intermediate_size=14336,
                                num_hidden_layers=32, num_attention_heads=32,
                                num_key_value_heads=8, max_position_embeddings=8192,
                                rope_theta=500000.0)}
    for model_name, dims in llamas.items():
        if over_budget():
            break
        try:
            cfg = LlamaConfig(rms_norm_eps=1e-5, **dims)
            cfg._attn_implementation = "sdpa"
            torch.set_default_dtype(torch.bfloat16)
            with torch.device(dev):
                model = LlamaForCausalLM(cfg)
            torch.set_default_dtype(torch.float32)
            model.eval()
        except Exception as e:  # noqa: BLE001
            torch.set_default_dtype(torch.float32)
            record("llm_prefill", "bf16", "", "", model_name, None, "",
                   f"model build failed: {type(e).__name__}: {str(e)[:300]}")
            continue
        vocab = dims["vocab_size"]
        with torch.inference_mode():
            for batch, prompt in ((1, 128), (1, 512), (1, 2048), (8, 512)):
                shape = f"batch={batch} input_len={prompt} tp=1"
                if over_budget():
                    break
                try:
                    ids = torch.randint(0, vocab, (batch, prompt), device=dev)

                    def prefill():
                        out = model(input_ids=ids, use_cache=True, logits_to_keep=1)
                        return out.logits[:, -1].argmax(-1)

                    us = timed(prefill, reps=5, warmup=2)
                    names = torch_bench.kernel_names(prefill)
                    record("llm_prefill", "bf16", shape, "", model_name, us,
                           f"{len(names)} kernels (torch.profiler), attention "
                           f"{attention_class(names)}; bf16 weights and KV cache; median of 5 "
                           f"after 2 warm-up")
                except Exception as e:  # noqa: BLE001
                    record("llm_prefill", "bf16", shape, "", model_name, None, "",
                           f"{type(e).__name__}: {str(e)[:300]}")
            for batch, prompt, steps in ((1, 512, 64), (16, 512, 64)):
                shape = f"batch={batch} input_len={prompt} output_len={steps} tp=1"
                if over_budget():
                    break
                try:
                    ids = torch.randint(0, vocab, (batch, prompt), device=dev)
                    state = {}

                    def advance(input_ids, cache):
                        out = model(input_ids=input_ids, past_key_values=cache, use_cache=True,
                                    logits_to_keep=1)
                        state["cache"] = out.past_key_values
                        state["next"] = out.logits[:, -1:].argmax(-1)

                    def start_cache():  # the prompt's forward fills a new cache
                        advance(ids, None)

                    def one_step():
                        advance(state["next"], state["cache"])

                    def decode_loop():
                        for _ in range(steps):
                            one_step()

                    loops = []
                    for _ in range(3):
                        start_cache()
                        torch.cuda.synchronize()
                        loops.append(timed(decode_loop, reps=1, warmup=0) / steps)
                    start_cache()
                    names = torch_bench.kernel_names(one_step)
                    record("llm_decode", "bf16", shape, "", model_name, statistics.median(loops),
                           f"{len(names)} kernels per decode step (torch.profiler), attention "
                           f"{attention_class(names)}; HF DynamicCache, greedy; TPOT = one "
                           f"{steps}-step loop's time / {steps}, median of 3 loops, after the "
                           f"prefill cases warmed the model up")
                except Exception as e:  # noqa: BLE001
                    record("llm_decode", "bf16", shape, "", model_name, None, "",
                           f"{type(e).__name__}: {str(e)[:300]}")
        del model
        torch.cuda.empty_cache()

    cols = ["kernel", "dtype", "shape", "impl", "model", "launch", "runtime", "median_us", "device", "software",
            "source", "derivation", "note"]
    with open(os.path.join(args.out, "torch_llm_corpus.csv"), "w", newline="") as f:
        w = csv.DictWriter(f, cols)
        w.writeheader()
        w.writerows(rows)
    with open(os.path.join(args.out, "torch_llm_raw.csv"), "w", newline="") as f:
        w = csv.DictWriter(f, ["kernel", "dtype", "shape", "impl", "model", "median_us", "note", "error"])
        w.writeheader()
        w.writerows(raw)
    print(f"torch_llm_bench: {len(rows)} rows, {len(raw) - len(rows)} cases failed, "
          f"{time.time() - start:.0f} s", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
