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


def export(module, example, out_dir, name, dynamic_batch=False):
    module.eval()
    path = os.path.join(out_dir, name)
    dynamic = {"input": {0: "batch"}, "output": {0: "batch"}} if dynamic_batch else None
    # Not under torch.no_grad(): without autograd, nn.TransformerEncoderLayer takes its fused
    # fast path (aten::_transformer_encoder_layer_fwd), which has no ONNX export.
    torch.onnx.export(module, example, path, opset_version=OPSET, input_names=["input"],
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

    def __init__(self, d=32, heads=4, ff=128):
        super().__init__()
        self.heads = heads
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
        return x + self.down(nn.functional.gelu(self.up(self.ln2(x))))


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
    export(torchvision.models.resnet18(weights=None), torch.zeros(1, 3, 224, 224), out_dir,
           "torchvision_resnet18.onnx", dynamic_batch=True)
    export(torchvision.models.mobilenet_v2(weights=None), torch.zeros(1, 3, 224, 224), out_dir,
           "torchvision_mobilenet_v2.onnx", dynamic_batch=True)


if __name__ == "__main__":
    main()
