#!/usr/bin/env python3
"""Exports real PyTorch models to ONNX, as users export them, for the ONNX importer's tests.

    scripts/export_torch_onnx.py OUT_DIR

Needs Debian's python3-torch and python3-torchvision (torch 1.13, torchvision 0.14) and
python3-onnx; nothing is downloaded (the models are built with random weights). Each model goes
through torch.onnx.export at opset 17 as exported (no simplifier), then its float weights are
stripped: every float tensor of more than one element keeps its name, type and dims but not its
values, which the importer never reads (it drops them itself: workloads/onnx/onnx_importer.cpp,
drop_data). Integer tensors and float scalars (shapes, axes, the attention scale, epsilons) keep
their values. So the files are a few KB and the tests need no torch: the committed copies in
workloads/onnx/tests/exported/ were written by this script, and CTest reruns it, when torch is
present, and checks that the fresh exports import to the same counts (workloads/onnx/CMakeLists.txt).

The expected MACs and parameters are derived by hand, or taken from torchvision's model cards, in
workloads/onnx/tests/exported_models_test.cpp.
"""

import os
import sys

try:
    import onnx
    import torch
    import torchvision
    from torch import nn
except ImportError as e:
    sys.exit(f"export_torch_onnx.py: {e}. Install Debian's python3-torch, python3-torchvision "
             "and python3-onnx to regenerate the exported test models.")

OPSET = 17


def strip_float_weights(model):
    """Clears the values of float tensors with more than one element (initializers, Constants)."""
    float_types = {onnx.TensorProto.FLOAT, onnx.TensorProto.FLOAT16, onnx.TensorProto.DOUBLE,
                   onnx.TensorProto.BFLOAT16}

    def strip(t):
        n = 1
        for d in t.dims:
            n *= d
        if t.data_type in float_types and n > 1:
            t.ClearField("raw_data")
            t.ClearField("float_data")
            t.ClearField("double_data")
            t.ClearField("int32_data")  # float16 and bfloat16 values live here

    for t in model.graph.initializer:
        strip(t)
    for node in model.graph.node:
        for a in node.attribute:
            if a.HasField("t"):
                strip(a.t)


def export(module, example, out_dir, name, dynamic_batch=False, opset=OPSET):
    module.eval()
    path = os.path.join(out_dir, name)
    dynamic = {"input": {0: "batch"}, "output": {0: "batch"}} if dynamic_batch else None
    # Not under torch.no_grad(): without autograd, nn.TransformerEncoderLayer takes its fused
    # fast path (aten::_transformer_encoder_layer_fwd), which has no ONNX export.
    torch.onnx.export(module, example, path, opset_version=opset, input_names=["input"],
                      output_names=["output"], dynamic_axes=dynamic, do_constant_folding=True)
    model = onnx.load(path)
    strip_float_weights(model)
    model.producer_name = f"torch {torch.__version__} via coda export_torch_onnx.py"
    onnx.save(model, path)
    params = sum(p.numel() for p in module.parameters())
    print(f"{name}: {params} parameters (torch), {len(model.graph.node)} nodes, "
          f"{os.path.getsize(path)} bytes")


class GptBlock(nn.Module):
    """A GPT-2-style pre-norm block with a causal mask made from the sequence length at run time
    (as nanoGPT and minGPT write it): LayerNorm, fused QKV projection, per-head attention with a
    1/sqrt(head_dim) scale and a masked_fill, output projection, residual; LayerNorm, MLP with GELU,
    residual."""

    def __init__(self, d=32, heads=4, ff=128, gelu="none"):
        super().__init__()
        self.heads = heads
        self.gelu = gelu  # "none": erf GELU (nanoGPT); "tanh": GPT-2's gelu_new
        self.ln1 = nn.LayerNorm(d)
        self.qkv = nn.Linear(d, 3 * d)
        self.proj = nn.Linear(d, d)
        self.ln2 = nn.LayerNorm(d)
        self.up = nn.Linear(d, ff)
        self.down = nn.Linear(ff, d)

    def forward(self, x):
        b, s, d = x.shape
        hd = d // self.heads
        q, k, v = self.qkv(self.ln1(x)).split(d, dim=2)
        q = q.view(b, s, self.heads, hd).transpose(1, 2)
        k = k.view(b, s, self.heads, hd).transpose(1, 2)
        v = v.view(b, s, self.heads, hd).transpose(1, 2)
        att = (q @ k.transpose(-2, -1)) * (1.0 / hd ** 0.5)
        mask = torch.tril(torch.ones(s, s, dtype=torch.bool))
        att = att.masked_fill(~mask, float("-inf")).softmax(dim=-1)
        y = (att @ v).transpose(1, 2).reshape(b, s, d)
        x = x + self.proj(y)
        return x + self.down(nn.functional.gelu(self.up(self.ln2(x)), approximate=self.gelu))


class RmsNorm(nn.Module):
    """LLaMA's RMSNorm as Hugging Face transformers writes it (LlamaRMSNorm): in fp32, then back."""

    def __init__(self, d, eps=1e-6):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(d))
        self.eps = eps

    def forward(self, x):
        dtype = x.dtype
        x = x.to(torch.float32)
        variance = x.pow(2).mean(-1, keepdim=True)
        x = x * torch.rsqrt(variance + self.eps)
        return self.weight * x.to(dtype)


def rotate_half(x):
    half = x.shape[-1] // 2
    return torch.cat((-x[..., half:], x[..., :half]), dim=-1)


class LlamaBlock(nn.Module):
    """A LLaMA-style decoder layer written as Hugging Face transformers' modeling_llama.py writes
    it: RMSNorm, Q/K/V projections without biases with grouped-query attention (4 heads, 2 KV
    heads of 8), rotary embeddings (rotate_half), repeat_kv's expand and reshape, a causal masked
    fill, softmax, output projection, residual; RMSNorm, SwiGLU MLP (SiLU of the gate times the
    up projection, FFN 96), residual."""

    def __init__(self, d=32, heads=4, kv_heads=2, ff=96):
        super().__init__()
        self.heads, self.kv_heads, self.hd = heads, kv_heads, d // heads
        self.norm1, self.norm2 = RmsNorm(d), RmsNorm(d)
        self.q = nn.Linear(d, d, bias=False)
        self.k = nn.Linear(d, kv_heads * self.hd, bias=False)
        self.v = nn.Linear(d, kv_heads * self.hd, bias=False)
        self.o = nn.Linear(d, d, bias=False)
        self.gate = nn.Linear(d, ff, bias=False)
        self.up = nn.Linear(d, ff, bias=False)
        self.down = nn.Linear(ff, d, bias=False)

    def repeat_kv(self, x):
        b, kv, s, hd = x.shape
        n = self.heads // self.kv_heads
        return x[:, :, None, :, :].expand(b, kv, n, s, hd).reshape(b, kv * n, s, hd)

    def forward(self, x):
        b, s, d = x.shape
        h = self.norm1(x)
        q = self.q(h).view(b, s, self.heads, self.hd).transpose(1, 2)
        k = self.k(h).view(b, s, self.kv_heads, self.hd).transpose(1, 2)
        v = self.v(h).view(b, s, self.kv_heads, self.hd).transpose(1, 2)
        inv_freq = 1.0 / (10000 ** (torch.arange(0, self.hd, 2, dtype=torch.float32) / self.hd))
        freqs = torch.outer(torch.arange(s, dtype=torch.float32), inv_freq)
        emb = torch.cat((freqs, freqs), dim=-1)
        cos, sin = emb.cos(), emb.sin()
        q = q * cos + rotate_half(q) * sin
        k = k * cos + rotate_half(k) * sin
        k, v = self.repeat_kv(k), self.repeat_kv(v)
        att = (q @ k.transpose(-2, -1)) / self.hd ** 0.5
        mask = torch.tril(torch.ones(s, s, dtype=torch.bool))
        att = att.masked_fill(~mask, float("-inf")).softmax(dim=-1)
        y = (att @ v).transpose(1, 2).reshape(b, s, d)
        x = x + self.o(y)
        h = self.norm2(x)
        return x + self.down(nn.functional.silu(self.gate(h)) * self.up(h))


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    out_dir = sys.argv[1]
    os.makedirs(out_dir, exist_ok=True)
    torch.manual_seed(0)
    layer = nn.TransformerEncoderLayer(d_model=32, nhead=4, dim_feedforward=64, dropout=0.0,
                                       batch_first=True)
    encoder = nn.TransformerEncoder(layer, num_layers=2, enable_nested_tensor=False)
    export(encoder, torch.zeros(2, 8, 32), out_dir, "torch_transformer_encoder.onnx")
    export(GptBlock(), torch.zeros(2, 8, 32), out_dir, "torch_gpt_block.onnx")
    # Opset 14, before LayerNormalization (opset 17): the LayerNorms as their pieces; with
    # GPT-2's tanh GELU.
    export(GptBlock(gelu="tanh"), torch.zeros(2, 8, 32), out_dir, "torch_gpt_block_opset14.onnx",
           opset=14)
    export(LlamaBlock(), torch.zeros(2, 8, 32), out_dir, "torch_llama_block.onnx")
    export(torchvision.models.resnet18(weights=None), torch.zeros(1, 3, 224, 224), out_dir,
           "torchvision_resnet18.onnx", dynamic_batch=True)
    export(torchvision.models.mobilenet_v2(weights=None), torch.zeros(1, 3, 224, 224), out_dir,
           "torchvision_mobilenet_v2.onnx", dynamic_batch=True)


if __name__ == "__main__":
    main()
