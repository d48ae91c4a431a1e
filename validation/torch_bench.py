#!/usr/bin/env python3
"""Times library kernels through PyTorch on this machine's GPU 0 and writes them as rows of the
published-corpus schema (validation/published/README.md), with their provenance.

    python3 validation/torch_bench.py --out DIR [--budget-s 150] [--quick]

What it times (each a kernel or a short chain as PyTorch launches it, timed alone):
  gemm               torch.matmul (cuBLAS), bf16 / fp16; torch._scaled_mm (fp8 e4m3, bf16 out)
  attention_fwd      F.scaled_dot_product_attention, FLASH_ATTENTION backend (FlashAttention-2
                     as bundled in PyTorch), CUDNN_ATTENTION backend (cuDNN fused attention) and
                     MATH backend (unfused), fp16
  attention_fwd_bwd  forward + backward of the same (one call, loss.backward())
  attention_decode   one query token per sequence over a KV cache (FLASH_ATTENTION backend)
  softmax, layer_norm, rms_norm, gelu, silu, copy
Timing: triton.testing.do_bench (CUDA events around each call, the L2 cleared before each call by
writing a 256 MB buffer, the median over ~100 ms of calls after ~25 ms of warm-up). Each case is
also run once under torch.profiler to record the CUDA kernels it launched (names and count), so
each row says which implementation ran.

Then, if the budget allows, l2_probe: a few memory-bound calls timed after a 256 MB write (as
do_bench), after a 256 MB read, and back to back, into torch_l2_probe.csv (not corpus rows).

Outputs in DIR: torch_raw.csv (every case: label, the corpus row's fields, the kernels, their
count, any error) and torch_corpus.csv (the corpus rows: only cases that ran, whose kernels match
the implementation class the row claims; rules in `corpus_row`). Nothing is fitted here.
"""
import argparse
import csv
import datetime
import os
import statistics
import subprocess
import sys
import time


def kernel_names(fn):
    """The CUDA kernels (and memcpys) one call of fn launches, in launch order, with repeats."""
    import torch
    from torch.profiler import ProfilerActivity, profile
    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
        fn()
        torch.cuda.synchronize()
    names = []
    for e in prof.events():
        if getattr(e, "device_type", None) is not None and str(e.device_type).endswith("CUDA"):
            names.append(e.name)
    return names


def cuda_median_us(fn, reps, warmup):
    """The median of `reps` calls of fn in microseconds, each timed with CUDA events on GPU 0's
    current stream, after `warmup` calls and a synchronize."""
    import torch
    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(reps):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        fn()
        b.record()
        b.synchronize()
        times.append(a.elapsed_time(b) * 1000.0)
    return statistics.median(times)


def attention_class(names):
    """The fused-attention class a list of launched kernels shows: cuDNN's fused attention (its
    SDPA or fMHA kernels) is fa3's class on Hopper, FlashAttention's kernels fa2's, anything
    else unfused."""
    joined = " ".join(n.lower() for n in names)
    if "cudnn" in joined and ("sdpa" in joined or "fmha" in joined):
        return "fa3"
    if "flash" in joined:
        return "fa2"
    return "unfused"


def provenance(torch, timing):
    """The device, software and source columns of a row measured on this machine's GPU 0."""
    props = torch.cuda.get_device_properties(0)
    try:
        smi = subprocess.run(
            ["nvidia-smi", "--query-gpu=name,driver_version,clocks.max.sm,clocks.max.mem,power.limit",
             "--format=csv,noheader"], capture_output=True, text=True, timeout=10).stdout.strip()
    except Exception as e:  # noqa: BLE001 (provenance only)
        smi = f"nvidia-smi failed: {e}"
    date = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
    return {
        "device": f"{props.name} ({props.multi_processor_count} SMs; nvidia-smi: {smi})",
        "software": (f"PyTorch {torch.__version__} (CUDA {torch.version.cuda}, cuDNN "
                     f"{torch.backends.cudnn.version()}), {timing}"),
        "source": (f"coda validation/torch_bench.py, run on {date} on one {props.name} of the "
                   f"device machine (commit {os.environ.get('CODA_COMMIT', 'unknown')})"),
    }


def classify(kernel, impl_claim, names):
    """The implementation class the launched kernels show, or None where they contradict the
    claim. Rules written before any run: a gemm row takes the class its kernel names show:
    'wgmma' for a Hopper name (sm90, nvjet, wgmma, gmma), 'mma_sync' for an Ampere one (sm80,
    ampere, cutlass_80, s16816), else none (the arch's default); attention 'fa2' needs
    flash_fwd/flash_bwd kernels without sm90; 'fa3' a cuDNN (cudnn) kernel or an sm90 flash
    kernel; 'unfused' at least three kernels and no fp32 GEMM (added after
    the first run, whose MATH-backend rows ran fp32 FFMA GEMMs); row kernels and copies exactly one kernel
    (norms: 'torch' when it is aten's vectorized_layer_norm_kernel); attention_decode
    'fa2_forward' when it ran FlashAttention-2's forward kernels (flash_fwd_kernel, or
    flash_fwd_splitkv_kernel and its combine) with the one query."""
    low = [n.lower() for n in names]
    joined = " ".join(low)
    if kernel == "attention_decode":
        # Added 2026-12-07, after the runs of 2026-12-04, whose decode rows all launched
        # pytorch_flash::flash_fwd_kernel or flash_fwd_splitkv_kernel (torch_raw.csv's names): the
        # prefill kernel with its query tile padded (arch::DecodeAttention::Fa2Forward).
        if "flash_fwd_kernel" in joined or "flash_fwd_splitkv_kernel" in joined:
            return "fa2_forward"
        return "" if "flash" in joined else None
    if kernel == "gemm":
        if any(t in joined for t in ("sm90", "nvjet", "wgmma", "gmma")):
            return "wgmma"
        if any(t in joined for t in ("sm80", "ampere", "cutlass_80", "s16816", "sm75")):
            return "mma_sync"
        return ""  # neither (a GEMV or split-K kernel, say): the row states no class
    if kernel.startswith("attention"):
        if impl_claim == "unfused":
            # PyTorch's standard attention in the row's 16-bit type: three or more kernels and no
            # fp32 GEMM (SDPA's MATH backend upcasts fp16 and bf16 to fp32 since PyTorch 2.5:
            # FFMA GEMMs named *gemm_f32f32*, which is not the fp16 class the row would claim).
            fp32_gemm = any("gemm" in n and "f32f32" in n for n in low)
            return "unfused" if len(names) >= 3 and not fp32_gemm else None
        if impl_claim == "fa3":
            if "cudnn" in joined or ("flash" in joined and "sm90" in joined):
                return "fa3"
            return None
        if impl_claim in ("fa2", ""):
            if "flash" in joined and "sm90" not in joined:
                return impl_claim
            return None
    if kernel in ("layer_norm", "rms_norm"):
        # One kernel; 'torch' when it is aten's vectorized_layer_norm_kernel, which re-reads its
        # row to normalise it (arch::NormImpl::Torch; added 2026-12-06, after the runs of
        # 2026-12-04, whose norm rows all launched it: torch_raw.csv's kernel names).
        if len(names) != 1:
            return None
        return "torch" if "vectorized_layer_norm_kernel" in joined else ""
    if kernel in ("softmax", "gelu", "silu", "copy"):
        return "" if len(names) == 1 else None
    return None


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", required=True)
    ap.add_argument("--budget-s", type=float, default=150.0)
    ap.add_argument("--quick", action="store_true", help="a few cases per kernel (a smoke run)")
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)

    import torch
    import torch.nn.functional as F
    from torch.nn.attention import SDPBackend, sdpa_kernel
    from triton.testing import do_bench

    start = time.time()
    dev = torch.device("cuda:0")
    prov = provenance(torch, f"timed with triton {__import__('triton').__version__} "
                             "testing.do_bench")
    device, software, source = prov["device"], prov["software"], prov["source"]
    timing_note = ("median of triton.testing.do_bench(warmup=25 ms, rep=100 ms, return_mode=median): "
                   "CUDA events around each call, L2 cleared (256 MB write) before each; eager launch")

    cases = []  # (label, kernel, dtype, shape, impl_claim, setup) setup() -> fn
    q = args.quick

    def add(kernel, dtype, shape, impl, setup):
        cases.append((f"{kernel} {dtype} {shape} {impl}".strip(), kernel, dtype, shape, impl, setup))

    tdt = {"bf16": torch.bfloat16, "fp16": torch.float16, "fp32": torch.float32}

    def gemm_setup(m, n, k, dt):
        def s():
            a = torch.randn(m, k, device=dev, dtype=tdt[dt])
            b = torch.randn(k, n, device=dev, dtype=tdt[dt])
            return lambda: torch.matmul(a, b)
        return s

    def fp8_setup(m, n, k):
        def s():
            a = torch.randn(m, k, device=dev).to(torch.float8_e4m3fn)
            b = torch.randn(n, k, device=dev).to(torch.float8_e4m3fn).t()  # column-major k x n
            one = torch.tensor(1.0, device=dev)
            return lambda: torch._scaled_mm(a, b, scale_a=one, scale_b=one, out_dtype=torch.bfloat16)
        return s

    squares = [1024, 4096] if q else [512, 1024, 2048, 4096, 8192]
    for s_ in squares:
        add("gemm", "bf16", f"m={s_} n={s_} k={s_}", "wgmma", gemm_setup(s_, s_, s_, "bf16"))
    for s_ in ([4096] if q else [2048, 4096, 8192]):
        add("gemm", "fp16", f"m={s_} n={s_} k={s_}", "wgmma", gemm_setup(s_, s_, s_, "fp16"))
    llama = [(12288, 4096), (4096, 4096), (11008, 4096), (4096, 11008)]
    llama70 = [(10240, 8192), (8192, 8192), (57344, 8192), (8192, 28672)]
    ms = [1, 16, 64, 256, 2048] if not q else [16, 2048]
    for m in ms:
        for n, k in (llama if not q else llama[:1]):
            add("gemm", "bf16", f"m={m} n={n} k={k}", "wgmma", gemm_setup(m, n, k, "bf16"))
    if not q:
        for m in (16, 4096):
            for n, k in llama70:
                add("gemm", "bf16", f"m={m} n={n} k={k}", "wgmma", gemm_setup(m, n, k, "bf16"))
    for (m, n, k) in ([(4096, 4096, 4096)] if q else
                      [(2048, 2048, 2048), (4096, 4096, 4096), (8192, 8192, 8192),
                       (2048, 11008, 4096), (2048, 4096, 11008), (64, 11008, 4096)]):
        add("gemm", "fp8_e4m3", f"m={m} n={n} k={k}", "wgmma", fp8_setup(m, n, k))

    def attn_setup(b, h, s, d, causal, backend, backward, dt="fp16", q_len=None):
        def st():
            ql = s if q_len is None else q_len
            qq = torch.randn(b, h, ql, d, device=dev, dtype=tdt[dt], requires_grad=backward)
            kk = torch.randn(b, h, s, d, device=dev, dtype=tdt[dt], requires_grad=backward)
            vv = torch.randn(b, h, s, d, device=dev, dtype=tdt[dt], requires_grad=backward)
            do = torch.randn(b, h, ql, d, device=dev, dtype=tdt[dt])

            def fwd():
                with sdpa_kernel(backend):
                    return F.scaled_dot_product_attention(qq, kk, vv, is_causal=bool(causal))

            if not backward:
                return fwd

            def fb():
                o = fwd()
                o.backward(do)
                qq.grad = kk.grad = vv.grad = None
            return fb
        return st

    seqs = [1024, 4096] if q else [512, 1024, 2048, 4096, 8192, 16384]
    for d in ([128] if q else [64, 128]):
        h = 2048 // d
        for causal in ([0] if q else [0, 1]):
            for s_ in seqs:
                b = 16384 // s_
                shape = f"batch={b} heads={h} seq={s_} head_dim={d} causal={causal}"
                for impl, be in (("fa2", SDPBackend.FLASH_ATTENTION),
                                 ("fa3", SDPBackend.CUDNN_ATTENTION)):
                    add("attention_fwd", "fp16", shape, impl, attn_setup(b, h, s_, d, causal, be, False))
                    add("attention_fwd_bwd", "fp16", shape, impl, attn_setup(b, h, s_, d, causal, be, True))
                if causal == 0 and s_ <= 2048:
                    add("attention_fwd", "fp16", shape, "unfused",
                        attn_setup(b, h, s_, d, causal, SDPBackend.MATH, False))
    for b in ([1, 16] if q else [1, 16, 64]):
        for s_ in ([4096] if q else [1024, 4096, 16384]):
            shape = f"batch={b} heads=32 kv_heads=32 seq={s_} head_dim=128"
            add("attention_decode", "fp16", shape, "",
                attn_setup(b, 32, s_, 128, 0, SDPBackend.FLASH_ATTENTION, False, q_len=1))

    def row_setup(kind, rows, cols, dt):
        def s():
            x = torch.randn(rows, cols, device=dev, dtype=tdt[dt])
            w = torch.randn(cols, device=dev, dtype=tdt[dt])
            bias = torch.randn(cols, device=dev, dtype=tdt[dt])
            if kind == "softmax":
                return lambda: torch.softmax(x, dim=-1)
            if kind == "layer_norm":
                return lambda: F.layer_norm(x, (cols,), w, bias)
            return lambda: F.rms_norm(x, (cols,), w)
        return s

    row_shapes = [(4096, 4096), (32768, 1024)] if q else \
        [(4096, 1024), (4096, 4096), (4096, 16384), (32768, 256), (32768, 1024), (32768, 4096),
         (32768, 16384)]
    for kind, dt in (("softmax", "bf16"), ("layer_norm", "bf16"), ("layer_norm", "fp32"),
                     ("rms_norm", "bf16")):
        for rows, cols in row_shapes:
            add(kind, dt, f"rows={rows} cols={cols}", "", row_setup(kind, rows, cols, dt))

    def elem_setup(kind, n, dt):
        def s():
            x = torch.randn(n, device=dev, dtype=tdt[dt])
            return (lambda: F.gelu(x)) if kind == "gelu" else (lambda: F.silu(x))
        return s

    for kind in ("gelu", "silu"):
        for n in ([1 << 20, 1 << 26] if q else [1 << 16, 1 << 20, 1 << 24, 1 << 28]):
            add(kind, "bf16", f"elements={n}", "", elem_setup(kind, n, "bf16"))

    def copy_setup(nbytes):
        def s():
            src = torch.randint(0, 100, (nbytes,), device=dev, dtype=torch.uint8)
            dst = torch.empty_like(src)
            return lambda: dst.copy_(src)
        return s

    for e in ([20, 28] if q else [15, 18, 20, 22, 24, 26, 28, 30]):
        add("copy", "int8", f"bytes={1 << e}", "", copy_setup(1 << e))

    raw_path = os.path.join(args.out, "torch_raw.csv")
    corpus_path = os.path.join(args.out, "torch_corpus.csv")
    raw_cols = ["label", "kernel", "dtype", "shape", "impl", "median_us", "n_kernels", "kernels",
                "shown_impl", "error"]
    corpus_cols = ["kernel", "dtype", "shape", "impl", "model", "median_us", "device", "software",
                   "source", "derivation", "note"]
    done = skipped = 0
    with open(raw_path, "w", newline="") as rf, open(corpus_path, "w", newline="") as cf:
        rw = csv.DictWriter(rf, raw_cols)
        cw = csv.DictWriter(cf, corpus_cols)
        rw.writeheader()
        cw.writeheader()
        for i, (label, kernel, dtype, shape, impl, setup) in enumerate(cases):
            if time.time() - start > args.budget_s:
                print(f"torch_bench: budget of {args.budget_s} s reached after {i} of "
                      f"{len(cases)} cases", file=sys.stderr)
                break
            row = {"label": label, "kernel": kernel, "dtype": dtype, "shape": shape, "impl": impl}
            try:
                fn = setup()
                fn()
                torch.cuda.synchronize()
                profiler_error = ""
                try:
                    names = kernel_names(fn)
                except Exception as e:  # noqa: BLE001 (then the class cannot be checked)
                    names, profiler_error = [], f"profiler failed: {type(e).__name__}: {str(e)[:100]}"
                ms_ = do_bench(fn, warmup=25, rep=100, return_mode="median")
                us = ms_ * 1000.0
                shown = None if profiler_error or not names else classify(kernel, impl, names)
                short = [n[:90] for n in names]
                row.update(median_us=f"{us:.4f}", n_kernels=len(names), kernels=" | ".join(short),
                           shown_impl="" if shown is None else (shown or "-"))
                if shown is None:
                    row["error"] = profiler_error or \
                        "launched kernels do not show the claimed class: not a corpus row"
                    skipped += 1
                else:
                    cw.writerow({
                        "kernel": kernel, "dtype": dtype, "shape": shape,
                        "impl": shown if kernel in ("gemm", "layer_norm", "rms_norm",
                                                    "attention_decode") else impl,
                        "model": "", "median_us": f"{us:.4f}", "device": device,
                        "software": software, "source": source, "derivation": "copied (measured)",
                        "note": f"{timing_note}; {len(names)} kernel(s): " + " | ".join(short)})
                    done += 1
            except Exception as e:  # noqa: BLE001 (a case that cannot run is recorded, not fatal)
                row["error"] = f"{type(e).__name__}: {str(e)[:300]}"
                skipped += 1
            finally:
                torch.cuda.empty_cache()
            rw.writerow(row)
            rf.flush()
            cf.flush()
            print(f"[{i + 1}/{len(cases)}] {label}: {row.get('median_us', '-')} us "
                  f"{row.get('error', '')}", file=sys.stderr)
    print(f"torch_bench: {done} corpus rows, {skipped} cases left out, {time.time() - start:.0f} s",
          file=sys.stderr)
    if time.time() - start < args.budget_s:
        l2_probe(torch, dev, os.path.join(args.out, "torch_l2_probe.csv"))
    return 0


def l2_probe(torch, dev, path):
    """Times a few memory-bound calls three ways, to tell what do_bench's L2 flush costs them:
    `write` (do_bench's own: 256 MB written before each call, leaving the L2 full of dirty lines),
    `read` (256 MB read before each call: the L2 full of clean lines) and `none` (a spin of ~50 us
    with no memory traffic before each call: the L2 as the last call left it). Each the median of
    50 calls timed with CUDA events after 5 warm-up calls, enqueued without waiting. The 2026-12
    corpus's H200 GEMVs fit 13.5 us + bytes / 4.43 TB/s as timed by do_bench, or 2.9 us + (bytes +
    min(bytes read, the 50 MiB L2)) / 4.47 TB/s if each call wrote back the flush's dirty lines,
    while its copies and elementwise rows fit no such write-back (coda's issue 16 notes): these
    rows decide between them. Not corpus rows: torch_l2_probe.csv, one row per case and way."""
    cache = torch.empty(256 * 1024 * 1024 // 4, dtype=torch.int32, device=dev)
    sink = torch.empty((), dtype=torch.int64, device=dev)

    def write():
        cache.zero_()

    def read():
        torch.sum(cache, out=sink)

    def idle():
        # ~50 us of spinning with no memory traffic: the GPU stays ahead of the host's launches
        # (as the 256 MB passes keep it) and the L2 keeps what the last call left.
        torch.cuda._sleep(100_000)

    def gemv(m, n, k):
        a = torch.randn(m, k, device=dev, dtype=torch.bfloat16)
        b = torch.randn(k, n, device=dev, dtype=torch.bfloat16)
        return lambda: torch.matmul(a, b), (m * k + k * n) * 2, m * n * 2

    def copy(nbytes):
        src = torch.randint(0, 100, (nbytes,), device=dev, dtype=torch.uint8)
        dst = torch.empty_like(src)
        return lambda: dst.copy_(src), nbytes, nbytes

    def silu(n):
        x = torch.randn(n, device=dev, dtype=torch.bfloat16)
        return lambda: torch.nn.functional.silu(x), 2 * n, 2 * n

    cases = [("gemm bf16 m=1 n=4096 k=4096", lambda: gemv(1, 4096, 4096)),
             ("gemm bf16 m=1 n=12288 k=4096", lambda: gemv(1, 12288, 4096)),
             ("gemm bf16 m=16 n=57344 k=8192", lambda: gemv(16, 57344, 8192)),
             ("copy int8 bytes=16777216", lambda: copy(1 << 24)),
             ("copy int8 bytes=268435456", lambda: copy(1 << 28)),
             ("silu bf16 elements=16777216", lambda: silu(1 << 24))]
    with open(path, "w", newline="") as f:
        w = csv.DictWriter(f, ["case", "l2_before", "median_us", "read_bytes", "write_bytes",
                               "error"])
        w.writeheader()
        for label, make in cases:
            try:
                fn, read_bytes, write_bytes = make()
                for way, before in (("write", write), ("read", read), ("none", idle)):
                    events = []
                    for _ in range(55):
                        before()
                        a = torch.cuda.Event(enable_timing=True)
                        b = torch.cuda.Event(enable_timing=True)
                        a.record()
                        fn()
                        b.record()
                        events.append((a, b))
                    torch.cuda.synchronize()
                    times = [a.elapsed_time(b) * 1000.0 for a, b in events[5:]]
                    w.writerow({"case": label, "l2_before": way,
                                "median_us": f"{statistics.median(times):.4f}",
                                "read_bytes": read_bytes, "write_bytes": write_bytes})
            except Exception as e:  # noqa: BLE001 (recorded, not fatal)
                w.writerow({"case": label, "error": f"{type(e).__name__}: {str(e)[:200]}"})
            finally:
                torch.cuda.empty_cache()
            f.flush()


if __name__ == "__main__":
    sys.exit(main())
