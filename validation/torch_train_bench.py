#!/usr/bin/env python3
"""Times whole training steps of GPT-2-shaped models written in plain PyTorch on this machine's
GPU 0, eagerly and from a CUDA graph, with each step's kernels by class, and writes them as rows
of the published-corpus schema (validation/published/README.md), with their provenance.

    python3 validation/torch_train_bench.py --out DIR [--budget-s 150]
    python3 validation/torch_train_bench.py --out DIR --smoke   # tiny model on the CPU: the
                                                                 # script's logic, no rows

Models (model = the coda preset in configs/workloads/llm/ whose shapes it copies): GPT-2 as
Radford et al. 2019 and coda's gpt2_* presets describe it -- learned positions, pre-LayerNorm
blocks (eps 1e-5), a fused QKV projection with bias, causal F.scaled_dot_product_attention,
GELU (tanh) MLP of 4 x hidden, a final LayerNorm and an LM head tied to the token embedding;
dropout 0. No Hugging Face code: one nn.Module per block, so the kernels are the layers' own
and PyTorch's, not a framework's glue. And TinyLlama 1.1B (`--only tinyllama`): LLaMA-2's
architecture (RMSNorm, rotary positions, grouped-query SDPA, SwiGLU, untied LM head), batch 4 and
8 at 2048 tokens.
The step: fp32 master weights, bf16 autocast (the weight cast cache off, as CUDA graphs need),
cross-entropy over every position (fp32 under autocast), backward, fused AdamW
(capturable), gradients set to None. One GPU: dp 1, tp 1, zero 0, no recomputation, fp32
gradients (grad_bits 32).
Timing: CUDA events around each step after warm-up, the median of the repetitions:
  eager  the step's kernels launched one by one from Python (launch: eager)
  graph  the whole step captured once in a CUDA graph and replayed (launch: graph): the GPU's
         time with the host out of the way
Each case is also run once under torch.profiler (eager): every kernel's name and GPU time go to
torch_train_kernels.csv with a class read off its name (gemm, attention, norm, loss, optimizer,
elementwise, reduction, copy, embedding, other), and the eager step is split into forward,
backward and optimizer by CUDA events (torch_train_raw.csv).
Outputs in DIR: torch_train_corpus.csv (the rows), torch_train_raw.csv (every case, its phases
and error, if any), torch_train_kernels.csv. Nothing is fitted here.
"""
import argparse
import collections
import csv
import json
import os
import statistics
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import torch_bench  # noqa: E402 (same folder: provenance, the CUDA-event timer)

# name, hidden, layers, heads (configs/workloads/llm/gpt2_*.yaml: vocab 50257, 1024 positions)
MODELS = {"gpt2_small": (768, 12, 12), "gpt2_medium": (1024, 24, 16),
          "gpt2_large": (1280, 36, 20), "gpt2_xl": (1600, 48, 25)}
# The LLaMA family (configs/workloads/llm/tinyllama_1p1b.yaml): hidden, layers, heads, kv heads,
# ffn, vocab.
LLAMAS = {"tinyllama_1p1b": (2048, 22, 32, 4, 5632, 32000)}
CASES = [("gpt2_small", 8, 1024), ("gpt2_small", 16, 1024), ("gpt2_medium", 8, 1024),
         ("gpt2_medium", 16, 1024), ("gpt2_large", 8, 1024), ("gpt2_xl", 8, 1024),
         ("gpt2_xl", 16, 1024), ("tinyllama_1p1b", 4, 2048), ("tinyllama_1p1b", 8, 2048)]
VOCAB, POSITIONS = 50257, 1024

# A kernel's class, read off its name: the first rule whose words appear in the lower-cased name.
CLASS_RULES = [
    ("optimizer", ("adam", "multi_tensor", "foreach")),
    ("attention", ("flash", "fmha", "sdpa", "attention", "cudnn_generated")),
    ("gemm", ("gemm", "nvjet", "xmma", "cutlass", "sm90_", "sm80_", "cublas")),
    ("norm", ("layer_norm", "layernorm")),
    ("loss", ("softmax", "cross_entropy", "nll_loss")),
    ("embedding", ("embedding", "index_select", "indexing_backward", "index_put")),
    ("reduction", ("reduce",)),
    ("copy", ("copy", "memcpy", "memset", "cat", "fill")),
    ("elementwise", ("elementwise", "vectorized", "unrolled", "gelu", "add", "mul")),
]


def kernel_class(name):
    low = name.lower()
    for cls, words in CLASS_RULES:
        if any(w in low for w in words):
            return cls
    return "other"


def causal_attention(torch, device):
    """Causal attention over q [b, heads, s, d] and k, v [b, kv_heads, s, d] (grouped when
    kv_heads < heads): F.scaled_dot_product_attention. PyTorch < 2.0 (Debian 12's, for --smoke on
    a CPU only) has none: the same math unfused, K and V repeated per group."""
    sdpa = getattr(torch.nn.functional, "scaled_dot_product_attention", None)
    if sdpa is not None:
        return lambda q, k, v: sdpa(q, k, v, is_causal=True,
                                    enable_gqa=k.shape[1] != q.shape[1])
    if device.type != "cpu":
        raise RuntimeError(f"PyTorch {torch.__version__} has no scaled_dot_product_attention")

    def unfused(q, k, v):
        group = q.shape[1] // k.shape[1]
        k, v = k.repeat_interleave(group, 1), v.repeat_interleave(group, 1)
        n = q.shape[-2]
        mask = torch.ones(n, n, dtype=torch.bool, device=q.device).tril()
        w = (q @ k.transpose(-1, -2)) / (q.shape[-1] ** 0.5)
        return torch.softmax(w.masked_fill(~mask, float("-inf")), -1) @ v
    return unfused


def built_on(torch, device, make):
    """make() with its parameters created on `device` (PyTorch >= 2.0), else moved there."""
    if hasattr(torch.device, "__enter__"):
        with torch.device(device):
            return make()
    return make().to(device)


def build_model(torch, hidden, layers, heads, device):
    nn, F = torch.nn, torch.nn.functional
    attend = causal_attention(torch, device)

    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.ln1 = nn.LayerNorm(hidden, eps=1e-5)
            self.qkv = nn.Linear(hidden, 3 * hidden)
            self.proj = nn.Linear(hidden, hidden)
            self.ln2 = nn.LayerNorm(hidden, eps=1e-5)
            self.fc = nn.Linear(hidden, 4 * hidden)
            self.fc2 = nn.Linear(4 * hidden, hidden)

        def forward(self, x):
            b, s, _ = x.shape
            q, k, v = self.qkv(self.ln1(x)).view(b, s, 3, heads, hidden // heads).unbind(2)
            a = attend(q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2))
            x = x + self.proj(a.transpose(1, 2).reshape(b, s, hidden))
            return x + self.fc2(F.gelu(self.fc(self.ln2(x)), approximate="tanh"))

    class GPT(nn.Module):
        def __init__(self):
            super().__init__()
            # Embedding tables read with index_select, whose backward (index_add) is capturable;
            # nn.Embedding's backward reads a count back to the host, which a CUDA graph refuses.
            self.wte = nn.Parameter(torch.randn(VOCAB, hidden) * 0.02)
            self.wpe = nn.Parameter(torch.randn(POSITIONS, hidden) * 0.01)
            self.blocks = nn.ModuleList(Block() for _ in range(layers))
            self.ln_f = nn.LayerNorm(hidden, eps=1e-5)

        def forward(self, ids, targets):
            b, s = ids.shape
            x = self.wte.index_select(0, ids.view(-1)).view(b, s, hidden) + self.wpe[:s]
            for blk in self.blocks:
                x = blk(x)
            logits = F.linear(self.ln_f(x), self.wte)  # tied LM head
            return F.cross_entropy(logits.view(-1, VOCAB), targets.view(-1))

    return built_on(torch, device, GPT)


def build_llama(torch, hidden, layers, heads, kv_heads, ffn, vocab, seq, device):
    """LLaMA-2's architecture (Touvron et al. 2023; HF LlamaForCausalLM's math): RMSNorm (eps
    1e-5) before attention and MLP, q/k/v/o projections without bias, rotary positions (theta
    10,000, rotate-half form) on q and k, causal grouped-query SDPA, SwiGLU MLP, a final RMSNorm
    and an untied LM head."""
    nn, F = torch.nn, torch.nn.functional
    d = hidden // heads
    attend = causal_attention(torch, device)

    rms = getattr(F, "rms_norm", None)

    class RMSNorm(nn.Module):
        def __init__(self):
            super().__init__()
            self.weight = nn.Parameter(torch.ones(hidden))

        def forward(self, x):
            if rms is not None:
                return rms(x, (hidden,), self.weight, 1e-5)
            return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-5) * self.weight

    def rotate(x, cos, sin):  # in x's type, as HF's apply_rotary_pos_emb casts cos and sin
        cos, sin = cos.to(x.dtype), sin.to(x.dtype)
        half = x.shape[-1] // 2
        rotated = torch.cat((-x[..., half:], x[..., :half]), dim=-1)
        return x * cos + rotated * sin

    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.norm1, self.norm2 = RMSNorm(), RMSNorm()
            self.q = nn.Linear(hidden, heads * d, bias=False)
            self.k = nn.Linear(hidden, kv_heads * d, bias=False)
            self.v = nn.Linear(hidden, kv_heads * d, bias=False)
            self.o = nn.Linear(heads * d, hidden, bias=False)
            self.gate = nn.Linear(hidden, ffn, bias=False)
            self.up = nn.Linear(hidden, ffn, bias=False)
            self.down = nn.Linear(ffn, hidden, bias=False)

        def forward(self, x, cos, sin):
            b, n, _ = x.shape
            h = self.norm1(x)
            q = self.q(h).view(b, n, heads, d).transpose(1, 2)
            k = self.k(h).view(b, n, kv_heads, d).transpose(1, 2)
            v = self.v(h).view(b, n, kv_heads, d).transpose(1, 2)
            a = attend(rotate(q, cos, sin), rotate(k, cos, sin), v)
            x = x + self.o(a.transpose(1, 2).reshape(b, n, hidden))
            h = self.norm2(x)
            return x + self.down(F.silu(self.gate(h)) * self.up(h))

    class Llama(nn.Module):
        def __init__(self):
            super().__init__()
            self.embed = nn.Parameter(torch.randn(vocab, hidden) * 0.02)  # index_select: capturable
            self.blocks = nn.ModuleList(Block() for _ in range(layers))
            self.norm = RMSNorm()
            self.head = nn.Linear(hidden, vocab, bias=False)
            inv = 1.0 / (10000.0 ** (torch.arange(0, d, 2).float() / d))
            angles = torch.outer(torch.arange(seq).float(), inv)
            angles = torch.cat((angles, angles), dim=-1)
            self.register_buffer("cos", angles.cos(), persistent=False)
            self.register_buffer("sin", angles.sin(), persistent=False)

        def forward(self, ids, targets):
            b, n = ids.shape
            x = self.embed.index_select(0, ids.view(-1)).view(b, n, hidden)
            for blk in self.blocks:
                x = blk(x, self.cos[:n], self.sin[:n])
            logits = self.head(self.norm(x))
            return F.cross_entropy(logits.view(-1, vocab), targets.view(-1))

    return built_on(torch, device, Llama)


def setup(torch, dev, smoke, model_name, batch, seq):
    """The model, its optimizer, the forward (the loss) and one whole training step. --smoke
    builds a two-layer model of hidden 64 of the same family."""
    torch.manual_seed(0)
    if model_name in LLAMAS or model_name == "llama_smoke":
        dims = (64, 2, 4, 2, 128, 512) if smoke else LLAMAS[model_name]
        model = build_llama(torch, *dims, seq, dev)
        vocab = dims[5]
    else:
        model = build_model(torch, *((64, 2, 4) if smoke else MODELS[model_name]), dev)
        vocab = VOCAB
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4,
                            **({} if smoke else {"fused": True, "capturable": True}))
    ids = torch.randint(0, vocab, (batch, seq), device=dev)
    targets = torch.randint(0, vocab, (batch, seq), device=dev)
    amp = torch.autocast(dev.type, dtype=torch.bfloat16, cache_enabled=False)

    def forward():
        with amp:
            return model(ids, targets)

    def step():
        forward().backward()
        opt.step()
        opt.zero_grad(set_to_none=True)

    return model, opt, forward, step


def graph_case(torch, index):
    """Case `index` of CASES timed from a CUDA graph, in a process of its own (a capture that
    fails leaves the process's CUDA state unusable): PyTorch's whole-network capture recipe
    (warm-up on a side stream, gradients set to None before capture, capturable AdamW).
    Prints one JSON line: graph_us, or error."""
    model_name, batch, seq = CASES[index]
    try:
        model, opt, forward, step = setup(torch, torch.device("cuda:0"), False, model_name,
                                          batch, seq)
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):
            for _ in range(3):
                step()
        torch.cuda.current_stream().wait_stream(side)
        graph = torch.cuda.CUDAGraph()
        opt.zero_grad(set_to_none=True)
        with torch.cuda.graph(graph):
            forward().backward()
            opt.step()
        print(json.dumps({"graph_us": torch_bench.cuda_median_us(graph.replay, 8, 3)}))
    except Exception as e:  # noqa: BLE001 (reported to the parent)
        print(json.dumps({"error": f"{type(e).__name__}: {str(e)[:300]}"}))
    return 0


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", required=True)
    ap.add_argument("--budget-s", type=float, default=150.0)
    ap.add_argument("--smoke", action="store_true",
                    help="a two-layer model of hidden 64 on the CPU, eager only: checks the script")
    ap.add_argument("--only", default="",
                    help="only the cases whose model name starts with this (gpt2, tinyllama)")
    ap.add_argument("--graph-case", type=int, help=argparse.SUPPRESS)  # the child process
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)

    import torch
    if args.graph_case is not None:
        return graph_case(torch, args.graph_case)
    start = time.time()
    smoke = args.smoke
    dev = torch.device("cpu" if smoke else "cuda:0")
    if smoke:
        prov = {"device": "cpu (smoke)", "software": f"PyTorch {torch.__version__}",
                "source": "smoke run"}
    else:
        prov = torch_bench.provenance(torch, "plain-PyTorch GPT-2 (validation/torch_train_bench.py),"
                                             " timed with CUDA events")
        prov["source"] = prov["source"].replace("torch_bench.py", "torch_train_bench.py")
    rows, raw, kernels = [], [], []

    def sync():
        if not smoke:
            torch.cuda.synchronize()

    def median_time(fn, reps, warmup):
        if not smoke:
            return torch_bench.cuda_median_us(fn, reps, warmup)
        for _ in range(warmup):
            fn()
        times = []
        for _ in range(reps):
            t = time.perf_counter()
            fn()
            times.append((time.perf_counter() - t) * 1e6)
        return statistics.median(times)

    cases = ([("gpt2_smoke", 2, 64), ("llama_smoke", 2, 64)] if smoke else
             [c for c in CASES if not args.only or c[0].startswith(args.only)])
    for index, (model_name, batch, seq) in enumerate(cases):
        if time.time() - start > args.budget_s:
            raw.append({"model": model_name, "batch": batch, "seq": seq,
                        "error": "skipped: over the time budget"})
            continue
        shape = f"batch={batch} seq={seq} grad_accum=1 dp=1 recompute=0 tp=1 zero=0 grad_bits=32 autocast=1"
        rec = {"model": model_name, "batch": batch, "seq": seq, "error": ""}
        row = None
        try:
            model, opt, forward, step = setup(torch, dev, smoke, model_name, batch, seq)
            rec["eager_us"] = median_time(step, reps=3 if smoke else 8, warmup=1 if smoke else 3)
            # The eager step split into its phases (CUDA events between them), median of 5.
            if not smoke:
                parts = collections.defaultdict(list)
                for _ in range(5):
                    ev = [torch.cuda.Event(enable_timing=True) for _ in range(4)]
                    ev[0].record()
                    loss = forward()
                    ev[1].record()
                    loss.backward()
                    ev[2].record()
                    opt.step()
                    opt.zero_grad(set_to_none=True)
                    ev[3].record()
                    ev[3].synchronize()
                    for i, name in enumerate(("forward", "backward", "optimizer")):
                        parts[name].append(ev[i].elapsed_time(ev[i + 1]) * 1000.0)
                for name, vals in parts.items():
                    rec[f"{name}_us"] = statistics.median(vals)
            # One eager step under the profiler: every kernel and its GPU time.
            from torch.profiler import ProfilerActivity, profile
            acts = [ProfilerActivity.CPU] + ([] if smoke else [ProfilerActivity.CUDA])
            with profile(activities=acts) as prof:
                step()
                sync()
            per = collections.OrderedDict()
            names = []
            for e in prof.events():
                if smoke or not str(getattr(e, "device_type", "")).endswith("CUDA"):
                    continue
                if getattr(e, "is_user_annotation", False) or "#" in e.name:
                    continue  # a range such as Optimizer.step#AdamW.step spans kernels listed too
                names.append(e.name)
                dur = e.time_range.elapsed_us() if getattr(e, "time_range", None) else 0.0
                slot = per.setdefault(e.name, [0, 0.0])
                slot[0] += 1
                slot[1] += dur
            for name, (calls, us) in per.items():
                kernels.append({"model": model_name, "batch": batch, "seq": seq,
                                "class": kernel_class(name), "calls": calls,
                                "total_us": f"{us:.1f}", "kernel": name})
            rec["kernels"] = len(names)
            impl = torch_bench.attention_class(names) if names else ""
            rec["impl"] = impl
            by_class = collections.Counter()
            for k in kernels:
                if (k["model"], k["batch"], k["seq"]) == (model_name, batch, seq):
                    by_class[k["class"]] += float(k["total_us"])
            rec["profiled_gpu_us"] = sum(by_class.values())
            rec["by_class_us"] = " ".join(f"{c}={v:.0f}" for c, v in by_class.most_common())
            tokens = batch * seq
            n_params = sum(p.numel() for p in model.parameters())
            rec["params"] = n_params
            family = ("LLaMA-2 architecture (RMSNorm, RoPE, GQA, SwiGLU, untied LM head)"
                      if model_name in LLAMAS else "GPT-2 (tied LM head)")
            common = (f"one GPU; plain-PyTorch {family}, {n_params / 1e6:.1f} M parameters, "
                      f"fp32 master weights, bf16 autocast, cross-entropy over all "
                      f"{tokens} positions, fused AdamW; {rec['kernels']} kernels per eager "
                      f"step (torch.profiler), attention {impl}")

            def row(launch, us, timing):
                return {"kernel": "llm_train", "dtype": "bf16", "shape": shape, "impl": impl,
                        "model": model_name, "launch": launch, "median_us": f"{us:.1f}",
                        "device": prov["device"], "software": prov["software"],
                        "source": prov["source"], "derivation": "copied (measured)",
                        "note": f"{common}; median of 8 {timing} after 3 warm-up"}

            if not smoke:
                rows.append(row("eager", rec["eager_us"], "steps"))
        except Exception as e:  # noqa: BLE001 (a failed case is recorded, the others go on)
            rec["error"] = f"{type(e).__name__}: {str(e)[:300]}"
        model = opt = forward = step = loss = None
        if not smoke and row is not None:
            torch.cuda.empty_cache()  # the child gets the whole GPU
            try:
                child = subprocess.run([sys.executable, os.path.abspath(__file__), "--out",
                                        args.out, "--graph-case", str(CASES.index(cases[index]))],
                                       capture_output=True, text=True, timeout=150)
                lines = child.stdout.strip().splitlines()
                res = (json.loads(lines[-1]) if lines else
                       {"error": f"exit {child.returncode}: {child.stderr.strip()[-300:]}"})
            except subprocess.TimeoutExpired:
                res = {"error": "over 150 s"}
            if "graph_us" in res:
                rec["graph_us"] = res["graph_us"]
                rows.append(row("graph", rec["graph_us"], "replays of the step captured in one "
                                "CUDA graph"))
            else:
                rec["graph_error"] = res["error"]
        print(f"llm_train {model_name} batch={batch} seq={seq}: "
              + " ".join(f"{k}={v:.0f}" if isinstance(v, float) else f"{k}={v}"
                         for k, v in rec.items() if k not in ("model", "batch", "seq")),
              file=sys.stderr)
        raw.append(rec)

    def write(name, cols, data):
        with open(os.path.join(args.out, name), "w", newline="") as f:
            w = csv.DictWriter(f, cols, extrasaction="ignore")
            w.writeheader()
            for r in data:
                w.writerow({k: (f"{v:.1f}" if isinstance(v, float) else v) for k, v in r.items()})

    write("torch_train_corpus.csv", ["kernel", "dtype", "shape", "impl", "model", "launch",
                                     "median_us", "device", "software", "source", "derivation",
                                     "note"], rows)
    write("torch_train_raw.csv", ["model", "batch", "seq", "params", "impl", "eager_us",
                                  "graph_us", "forward_us", "backward_us", "optimizer_us",
                                  "profiled_gpu_us", "kernels", "by_class_us", "error", "graph_error"], raw)
    write("torch_train_kernels.csv", ["model", "batch", "seq", "class", "calls", "total_us",
                                      "kernel"], kernels)
    failed = sum(1 for r in raw if r.get("error") or r.get("graph_error"))
    print(f"torch_train_bench: {len(rows)} rows, {failed} cases failed or skipped, "
          f"{time.time() - start:.0f} s", file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
