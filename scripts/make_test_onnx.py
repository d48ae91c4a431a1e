#!/usr/bin/env python3
"""Writes the small ONNX models the ONNX importer's tests read (workloads/onnx/tests).

    scripts/make_test_onnx.py OUT_DIR

Built with onnx.helper from Debian's python3-onnx (1.12): no torch, no downloads. Weights are
zeros: the importer reads shapes only. The expected numbers (MACs, parameters, op counts) are
derived by hand in workloads/onnx/tests/onnx_importer_test.cpp from the sizes below.
"""

import os
import sys

try:
    import numpy as np
    import onnx
    from onnx import TensorProto, helper, numpy_helper
except ImportError as e:  # the ONNX tests must fail, loudly, without these
    sys.exit(f"make_test_onnx.py: {e}. Install Debian's python3-onnx and python3-numpy "
             "(scripts/setup.sh does), then rerun the tests.")

OPSET = 17  # LayerNormalization is opset 17; python3-onnx 1.12 supports up to 17
F = TensorProto.FLOAT


def weight(name, *shape):
    return numpy_helper.from_array(np.zeros(shape, dtype=np.float32), name)


def ints(name, values):
    return numpy_helper.from_array(np.array(values, dtype=np.int64), name)


def scalar(name, value):
    return numpy_helper.from_array(np.array(value, dtype=np.float32), name)


def save(model, out_dir, name):
    onnx.checker.check_model(model)
    onnx.save(model, os.path.join(out_dir, name))


def model(graph, opset=OPSET, extra_opsets=()):
    imports = [helper.make_opsetid("", opset)] + list(extra_opsets)
    return helper.make_model(graph, producer_name="coda make_test_onnx.py", opset_imports=imports)


def transformer_block():
    """Pre-norm block: B=2, S=8, hidden D=16, H=2 heads of 8, FFN 64, erf GELU."""
    B, S, D, H, HD, FF = 2, 8, 16, 2, 8, 64
    n = helper.make_node
    nodes = [
        n("LayerNormalization", ["x", "ln1.g", "ln1.b"], ["ln1"], name="ln1", axis=-1),
        n("MatMul", ["ln1", "w_qkv"], ["qkv0"], name="qkv"),
        n("Add", ["qkv0", "b_qkv"], ["qkv"], name="qkv.bias"),
        n("Split", ["qkv", "qkv.split"], ["q", "k", "v"], name="split", axis=-1),
        n("Reshape", ["q", "heads.shape"], ["q4"], name="q.reshape"),
        n("Reshape", ["k", "heads.shape"], ["k4"], name="k.reshape"),
        n("Reshape", ["v", "heads.shape"], ["v4"], name="v.reshape"),
        n("Transpose", ["q4"], ["qh"], name="q.transpose", perm=[0, 2, 1, 3]),
        n("Transpose", ["k4"], ["kt"], name="k.transpose", perm=[0, 2, 3, 1]),
        n("Transpose", ["v4"], ["vh"], name="v.transpose", perm=[0, 2, 1, 3]),
        n("MatMul", ["qh", "kt"], ["scores"], name="qk"),
        n("Div", ["scores", "sqrt_d"], ["scaled"], name="scale"),
        n("Softmax", ["scaled"], ["probs"], name="softmax", axis=-1),
        n("MatMul", ["probs", "vh"], ["ctx"], name="pv"),
        n("Transpose", ["ctx"], ["ctx_t"], name="ctx.transpose", perm=[0, 2, 1, 3]),
        n("Reshape", ["ctx_t", "hidden.shape"], ["ctx2"], name="ctx.reshape"),
        n("MatMul", ["ctx2", "w_o"], ["attn0"], name="out_proj"),
        n("Add", ["attn0", "b_o"], ["attn"], name="out_proj.bias"),
        n("Add", ["x", "attn"], ["res1"], name="residual1"),
        n("LayerNormalization", ["res1", "ln2.g", "ln2.b"], ["ln2"], name="ln2", axis=-1),
        n("MatMul", ["ln2", "w_1"], ["h0"], name="ffn1"),
        n("Add", ["h0", "b_1"], ["h"], name="ffn1.bias"),
        # GELU as torch.onnx exports it before opset 20: 0.5 * x * (1 + erf(x / sqrt(2)))
        n("Div", ["h", "sqrt2"], ["g0"], name="gelu.div"),
        n("Erf", ["g0"], ["g1"], name="gelu.erf"),
        n("Add", ["g1", "one"], ["g2"], name="gelu.add"),
        n("Mul", ["h", "g2"], ["g3"], name="gelu.mul"),
        n("Mul", ["g3", "half"], ["gelu"], name="gelu.half"),
        n("MatMul", ["gelu", "w_2"], ["f0"], name="ffn2"),
        n("Add", ["f0", "b_2"], ["f"], name="ffn2.bias"),
        n("Add", ["res1", "f"], ["y"], name="residual2"),
    ]
    inits = [
        weight("ln1.g", D), weight("ln1.b", D), weight("w_qkv", D, 3 * D), weight("b_qkv", 3 * D),
        ints("qkv.split", [D, D, D]), ints("heads.shape", [B, S, H, HD]),
        scalar("sqrt_d", HD ** 0.5), ints("hidden.shape", [B, S, D]),
        weight("w_o", D, D), weight("b_o", D), weight("ln2.g", D), weight("ln2.b", D),
        weight("w_1", D, FF), weight("b_1", FF), scalar("sqrt2", 2 ** 0.5), scalar("one", 1.0),
        scalar("half", 0.5), weight("w_2", FF, D), weight("b_2", D),
    ]
    graph = helper.make_graph(nodes, "transformer_block",
                              [helper.make_tensor_value_info("x", F, [B, S, D])],
                              [helper.make_tensor_value_info("y", F, [B, S, D])], inits)
    return model(graph)


def exported_attention(S):
    """Causal self-attention as torch.onnx.export writes it: the head split and the scale
    computed from Shape, the Q/K/V parts as Slices of the fused projection with ends computed from
    the shape, and a causal mask from ConstantOfShape, Trilu and Equal applied by Where.
    B=1, D=16, H=2 heads of 8; S=32 (a 32 x 32 mask: 1024 elements, folded by value) or 64 (4096
    elements: too many to fold, a constant by its shape alone)."""
    B, D, H, HD = 1, 16, 2, 8
    n = helper.make_node
    nodes = [
        n("MatMul", ["x", "w_qkv"], ["qkv"], name="qkv"),
        # D from the shape: Shape -> Gather(2) -> Unsqueeze; the ends of the three Slices.
        n("Shape", ["x"], ["x.shape"], name="shape"),
        n("Gather", ["x.shape", "i2"], ["d"], name="d", axis=0),
        n("Unsqueeze", ["d", "axes0"], ["d1"], name="d1"),
        n("Mul", ["d1", "two"], ["d2"], name="d2"),
        n("Mul", ["d1", "three"], ["d3"], name="d3"),
        n("Slice", ["qkv", "zero1", "d1", "minus1"], ["q"], name="slice_q"),
        n("Slice", ["qkv", "d1", "d2", "minus1"], ["k"], name="slice_k"),
        n("Slice", ["qkv", "d2", "d3", "minus1"], ["v"], name="slice_v"),
        # [B, S, H, D / H] from the shape: Concat of Gathers and a Div.
        n("Gather", ["x.shape", "i0"], ["b"], name="b", axis=0),
        n("Gather", ["x.shape", "i1"], ["s"], name="s", axis=0),
        n("Div", ["d", "heads"], ["hd"], name="hd"),
        n("Unsqueeze", ["b", "axes0"], ["b1"], name="b1"),
        n("Unsqueeze", ["s", "axes0"], ["s1"], name="s1"),
        n("Unsqueeze", ["hd", "axes0"], ["hd1"], name="hd1"),
        n("Concat", ["b1", "s1", "heads1", "hd1"], ["heads.shape"], name="heads.shape", axis=0),
        n("Reshape", ["q", "heads.shape"], ["q4"], name="q.reshape"),
        n("Reshape", ["k", "heads.shape"], ["k4"], name="k.reshape"),
        n("Reshape", ["v", "heads.shape"], ["v4"], name="v.reshape"),
        n("Transpose", ["q4"], ["qh"], name="q.transpose", perm=[0, 2, 1, 3]),
        n("Transpose", ["k4"], ["kt"], name="k.transpose", perm=[0, 2, 3, 1]),
        n("Transpose", ["v4"], ["vh"], name="v.transpose", perm=[0, 2, 1, 3]),
        n("MatMul", ["qh", "kt"], ["scores"], name="qk"),
        # The scale: 1 / sqrt(float(hd)).
        n("Cast", ["hd"], ["hd.f"], name="hd.cast", to=TensorProto.FLOAT),
        n("Sqrt", ["hd.f"], ["sqrt_hd"], name="sqrt_hd"),
        n("Div", ["onef", "sqrt_hd"], ["scale"], name="scale"),
        n("Mul", ["scores", "scale"], ["scaled"], name="scaled"),
        # The causal mask: ones(S, S) -> tril -> == 0 -> Where(mask, -inf, scores).
        n("Unsqueeze", ["s", "axes0"], ["s1b"], name="s1b"),
        n("Concat", ["s1b", "s1b"], ["mask.shape"], name="mask.shape", axis=0),
        n("ConstantOfShape", ["mask.shape"], ["ones"], name="ones",
          value=helper.make_tensor("one", F, [1], [1.0])),
        n("Trilu", ["ones"], ["tril"], name="tril", upper=0),
        n("Equal", ["tril", "zerof"], ["mask"], name="mask"),
        n("Where", ["mask", "neg_inf", "scaled"], ["masked"], name="masked_fill"),
        n("Softmax", ["masked"], ["probs"], name="softmax", axis=-1),
        n("MatMul", ["probs", "vh"], ["ctx"], name="pv"),
    ]
    inits = [
        weight("w_qkv", D, 3 * D), ints("i0", 0), ints("i1", 1), ints("i2", 2),
        ints("axes0", [0]), ints("two", [2]), ints("three", [3]), ints("zero1", [0]),
        ints("minus1", [-1]), ints("heads", H), ints("heads1", [H]), scalar("onef", 1.0),
        scalar("zerof", 0.0), scalar("neg_inf", float("-inf")),
    ]
    graph = helper.make_graph(nodes, "exported_attention",
                              [helper.make_tensor_value_info("x", F, [B, S, D])],
                              [helper.make_tensor_value_info("ctx", F, [B, H, S, HD])], inits)
    return model(graph)


def resnet_block():
    """Basic block on [1, 8, 8, 8], then global average pool, flatten and a 10-way Gemm."""
    C = 8
    n = helper.make_node
    nodes = [
        n("Conv", ["x", "conv1.w"], ["c1"], name="conv1", kernel_shape=[3, 3], pads=[1, 1, 1, 1]),
        n("BatchNormalization", ["c1", "bn1.s", "bn1.b", "bn1.m", "bn1.v"], ["b1"], name="bn1"),
        n("Relu", ["b1"], ["r1"], name="relu1"),
        n("Conv", ["r1", "conv2.w", "conv2.b"], ["c2"], name="conv2", kernel_shape=[3, 3],
          pads=[1, 1, 1, 1]),
        n("BatchNormalization", ["c2", "bn2.s", "bn2.b", "bn2.m", "bn2.v"], ["b2"], name="bn2"),
        n("Add", ["b2", "x"], ["sum"], name="add"),
        n("Relu", ["sum"], ["r2"], name="relu2"),
        n("GlobalAveragePool", ["r2"], ["gap"], name="gap"),
        n("Flatten", ["gap"], ["flat"], name="flatten", axis=1),
        n("Gemm", ["flat", "fc.w", "fc.b"], ["y"], name="fc", transB=1),
    ]
    inits = [weight("conv1.w", C, C, 3, 3), weight("conv2.w", C, C, 3, 3), weight("conv2.b", C),
             weight("fc.w", 10, C), weight("fc.b", 10)]
    for bn in ("bn1", "bn2"):
        inits += [weight(f"{bn}.{p}", C) for p in ("s", "b", "m", "v")]
    graph = helper.make_graph(nodes, "resnet_block",
                              [helper.make_tensor_value_info("x", F, [1, C, 8, 8])],
                              [helper.make_tensor_value_info("y", F, [1, 10])], inits)
    return model(graph)


def coverage():
    """The remaining supported ops: a grouped strided conv with asymmetric pads, both pools,
    Sigmoid, Tanh, Sub, Concat, Split, Identity, an RMSNorm written out (Pow, ReduceMean, Add,
    Sqrt, Div, Mul), a broadcasting batched MatMul and a Gather from an embedding table."""
    n = helper.make_node
    nodes = [
        n("Conv", ["x", "gw"], ["c"], name="gconv", kernel_shape=[3, 3], group=4,
          strides=[2, 2], pads=[1, 1, 0, 0]),                               # [1, 8, 4, 4]
        n("MaxPool", ["c"], ["mp"], name="maxpool", kernel_shape=[2, 2], strides=[2, 2]),
        n("AveragePool", ["c"], ["ap"], name="avgpool", kernel_shape=[2, 2], strides=[2, 2]),
        n("Sigmoid", ["mp"], ["s"], name="sigmoid"),
        n("Tanh", ["ap"], ["t"], name="tanh"),
        n("Sub", ["s", "t"], ["d"], name="sub"),
        n("Concat", ["s", "t"], ["cat"], name="concat", axis=1),             # [1, 16, 2, 2]
        n("Split", ["cat", "split.sizes"], ["sp1", "sp2"], name="split", axis=1),
        n("Identity", ["sp1"], ["id"], name="identity"),
        n("Reshape", ["id", "rms.shape"], ["f"], name="reshape"),           # [1, 4, 4]
        n("Pow", ["f", "two"], ["sq"], name="rms.pow"),
        n("ReduceMean", ["sq"], ["ms"], name="rms.mean", axes=[-1], keepdims=1),  # [1, 4, 1]
        n("Add", ["ms", "eps"], ["mse"], name="rms.eps"),
        n("Sqrt", ["mse"], ["rms"], name="rms.sqrt"),
        n("Div", ["f", "rms"], ["normed"], name="rms.div"),
        n("Mul", ["normed", "rms.g"], ["y"], name="rms.scale"),
        n("MatMul", ["y", "bw"], ["bm"], name="bmm"),                        # [3, 4, 5]
        n("Gather", ["table", "ids"], ["emb"], name="embed", axis=0),        # [3, 6]
    ]
    inits = [weight("gw", 8, 2, 3, 3), ints("split.sizes", [4, 12]), ints("rms.shape", [1, 4, 4]),
             scalar("two", 2.0), scalar("eps", 1e-6), weight("rms.g", 4), weight("bw", 3, 4, 5),
             weight("table", 10, 6)]
    graph = helper.make_graph(
        nodes, "coverage",
        [helper.make_tensor_value_info("x", F, [1, 8, 8, 8]),
         helper.make_tensor_value_info("ids", TensorProto.INT64, [3])],
        [helper.make_tensor_value_info("d", F, [1, 8, 2, 2]),
         helper.make_tensor_value_info("sp2", F, [1, 12, 2, 2]),
         helper.make_tensor_value_info("bm", F, [3, 4, 5]),
         helper.make_tensor_value_info("emb", F, [3, 6])], inits)
    return model(graph)


def unsupported():
    """A Relu, a made-up op of domain com.example (output shape declared), a Relu after it."""
    n = helper.make_node
    nodes = [
        n("Relu", ["x"], ["r"], name="relu_in"),
        n("FancyOp", ["r"], ["z"], name="fancy_0", domain="com.example"),
        n("Relu", ["z"], ["y"], name="relu_out"),
    ]
    graph = helper.make_graph(nodes, "unsupported",
                              [helper.make_tensor_value_info("x", F, [4, 16])],
                              [helper.make_tensor_value_info("y", F, [4, 16])],
                              value_info=[helper.make_tensor_value_info("z", F, [4, 16])])
    m = model(graph, extra_opsets=[helper.make_opsetid("com.example", 1)])
    onnx.save(m, os.path.join(OUT, "unsupported.onnx"))  # the checker rejects unknown domains


def dynamic_batch():
    """x ["batch", 16] @ w [16, 32] -> Relu -> y ["batch", 32]."""
    n = helper.make_node
    nodes = [n("MatMul", ["x", "w"], ["h"], name="fc"), n("Relu", ["h"], ["y"], name="relu")]
    graph = helper.make_graph(nodes, "dynamic_batch",
                              [helper.make_tensor_value_info("x", F, ["batch", 16])],
                              [helper.make_tensor_value_info("y", F, ["batch", 32])],
                              [weight("w", 16, 32)])
    return model(graph)


def dilated_conv():
    n = helper.make_node
    nodes = [n("Conv", ["x", "w"], ["y"], name="dilated", kernel_shape=[3, 3],
               dilations=[2, 2])]
    graph = helper.make_graph(nodes, "dilated_conv",
                              [helper.make_tensor_value_info("x", F, [1, 4, 16, 16])],
                              [helper.make_tensor_value_info("y", F, [1, 4, 12, 12])],
                              [weight("w", 4, 4, 3, 3)])
    return model(graph)


def conv_weight_chains():
    """Convs without kernel_shape: one whose weight passes an Identity (its shape is static), one
    whose weight is computed by an Add (its shape is known only after inference)."""
    n = helper.make_node
    nodes = [n("Identity", ["w"], ["w_id"], name="w.identity"),
             n("Conv", ["x", "w_id"], ["y"], name="through_identity", pads=[1, 1, 1, 1]),
             n("Add", ["w", "w"], ["w_sum"], name="w.add"),
             n("Conv", ["y", "w_sum"], ["z"], name="computed_weight", pads=[1, 1, 1, 1])]
    graph = helper.make_graph(nodes, "conv_weight_chains",
                              [helper.make_tensor_value_info("x", F, [1, 4, 8, 8])],
                              [helper.make_tensor_value_info("z", F, [1, 4, 8, 8])],
                              [weight("w", 4, 4, 3, 3)])
    return model(graph)


def function_lookalikes():
    """Decompositions that are not quite the functions function_patterns.h recognises, each on
    x [2, 4, 8]: a GELU whose last factor is 0.6, not 0.5; an RMSNorm whose mean of squares is
    also a graph output; an RMSNorm over axis 1, not the last; x * sigmoid(g) of another tensor
    g (a gate, not SiLU). Every node must import as itself."""
    n = helper.make_node
    nodes = [
        n("Div", ["x", "sqrt2"], ["g0"], name="gelu.div"),
        n("Erf", ["g0"], ["g1"], name="gelu.erf"),
        n("Add", ["g1", "one"], ["g2"], name="gelu.add"),
        n("Mul", ["x", "g2"], ["g3"], name="gelu.mul"),
        n("Mul", ["g3", "not_half"], ["gelu"], name="gelu.scale"),
        n("Pow", ["x", "two"], ["r0"], name="rms.pow"),
        n("ReduceMean", ["r0"], ["r1"], name="rms.mean", axes=[-1], keepdims=1),
        n("Add", ["r1", "eps"], ["r2"], name="rms.eps"),
        n("Sqrt", ["r2"], ["r3"], name="rms.sqrt"),
        n("Div", ["x", "r3"], ["r4"], name="rms.div"),
        n("Mul", ["r4", "rms.g"], ["rms"], name="rms.scale"),
        n("Pow", ["x", "two"], ["a0"], name="axis1.pow"),
        n("ReduceMean", ["a0"], ["a1"], name="axis1.mean", axes=[1], keepdims=1),
        n("Add", ["a1", "eps"], ["a2"], name="axis1.eps"),
        n("Sqrt", ["a2"], ["a3"], name="axis1.sqrt"),
        n("Div", ["x", "a3"], ["a4"], name="axis1.div"),
        n("Mul", ["a4", "rms.g"], ["axis1"], name="axis1.scale"),
        n("Sigmoid", ["g"], ["s0"], name="gate.sigmoid"),
        n("Mul", ["x", "s0"], ["gated"], name="gate.mul"),
    ]
    inits = [scalar("sqrt2", 2 ** 0.5), scalar("one", 1.0), scalar("not_half", 0.6),
             scalar("two", 2.0), scalar("eps", 1e-6), weight("rms.g", 8)]
    out = [helper.make_tensor_value_info(name, F, [2, 4, 8])
           for name in ("gelu", "rms", "axis1", "gated")]
    out.append(helper.make_tensor_value_info("r1", F, [2, 4, 1]))
    graph = helper.make_graph(nodes, "function_lookalikes",
                              [helper.make_tensor_value_info("x", F, [2, 4, 8]),
                               helper.make_tensor_value_info("g", F, [2, 4, 8])], out, inits)
    return model(graph)


def qdq_block():
    """Quantized in the QDQ form (onnxruntime's quantize_static, TensorRT's explicit
    quantization): x [4, 16] -> QuantizeLinear -> DequantizeLinear -> MatMul with the
    DequantizeLinear of an int8 weight [16, 32] -> Relu; and x2 [1, 4, 8, 8] -> QuantizeLinear ->
    DequantizeLinear -> Conv (3x3, pad 1, 8 filters) with a DequantizeLinear'd int8 weight and an
    int32 bias -> y2. Scales per tensor, zero points 0."""
    n = helper.make_node
    nodes = [
        n("QuantizeLinear", ["x", "sx", "zx"], ["xq"], name="x.q"),
        n("DequantizeLinear", ["xq", "sx", "zx"], ["xd"], name="x.dq"),
        n("DequantizeLinear", ["w", "sw", "zw"], ["wd"], name="w.dq"),
        n("MatMul", ["xd", "wd"], ["y"], name="mm"),
        n("Relu", ["y"], ["r"], name="relu"),
        n("QuantizeLinear", ["x2", "sx", "zx"], ["x2q"], name="x2.q"),
        n("DequantizeLinear", ["x2q", "sx", "zx"], ["x2d"], name="x2.dq"),
        n("DequantizeLinear", ["cw", "sw", "zw"], ["cwd"], name="cw.dq"),
        n("DequantizeLinear", ["cb", "sb", "zb"], ["cbd"], name="cb.dq"),
        n("Conv", ["x2d", "cwd", "cbd"], ["y2"], name="conv", kernel_shape=[3, 3],
          pads=[1, 1, 1, 1]),
    ]

    def int8(name, *shape):
        return numpy_helper.from_array(np.zeros(shape, dtype=np.int8), name)

    inits = [scalar("sx", 0.1), int8("zx"), int8("w", 16, 32), scalar("sw", 0.05), int8("zw"),
             int8("cw", 8, 4, 3, 3), numpy_helper.from_array(np.zeros(8, dtype=np.int32), "cb"),
             scalar("sb", 0.005), numpy_helper.from_array(np.array(0, dtype=np.int32), "zb")]
    graph = helper.make_graph(
        nodes, "qdq_block",
        [helper.make_tensor_value_info("x", F, [4, 16]),
         helper.make_tensor_value_info("x2", F, [1, 4, 8, 8])],
        [helper.make_tensor_value_info("r", F, [4, 32]),
         helper.make_tensor_value_info("y2", F, [1, 8, 8, 8])], inits)
    return model(graph)


MS = "com.microsoft"
EXPORTED = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "workloads", "onnx",
                        "tests", "exported")


def uint8(name, *shape):
    return numpy_helper.from_array(np.zeros(shape, dtype=np.uint8), name)


def int4_llama_block():
    """The committed torch export of the LLaMA-style layer (export_torch_onnx.py) with its seven
    weight MatMuls rewritten as onnxruntime's matmul_nbits_quantizer writes them (block-wise
    int4, block_size 32): each MatMul of a float initializer B [K, N] becomes a com.microsoft
    MatMulNBits node '<name>_Q4' (K, N, bits 4, block_size 32) reading B_Q4 [N, K/32, 16] uint8
    and B_scales; the attention projections as onnxruntime >= 1.20 writes them (symmetric,
    scales [N, K/32]), the MLP's as older releases do (asymmetric: scales [N * K/32] and packed
    zero points [N * ceil(K/32 / 2)] uint8)."""
    m = onnx.load(os.path.join(EXPORTED, "torch_llama_block.onnx"))
    g = m.graph
    inits = {t.name: t for t in g.initializer}
    block, nodes = 32, []
    for node in g.node:
        b = inits.get(node.input[1]) if node.op_type == "MatMul" else None
        if b is None or len(b.dims) != 2:
            nodes.append(node)
            continue
        k, n = b.dims
        blocks = k // block
        mlp = node.name.split("/")[1] in ("gate", "up", "down")
        q = uint8(b.name + "_Q4", n, blocks, block // 2)
        scales = weight(b.name + "_scales", n * blocks) if mlp else weight(b.name + "_scales", n, blocks)
        new_inputs = [node.input[0], q.name, scales.name]
        g.initializer.extend([q, scales])
        if mlp:
            zp = uint8(b.name + "_zero_points", n * ((blocks + 1) // 2))
            g.initializer.append(zp)
            new_inputs.append(zp.name)
        nodes.append(helper.make_node("MatMulNBits", new_inputs, list(node.output),
                                      name=node.name + "_Q4", domain=MS, K=k, N=n, bits=4,
                                      block_size=block))
        g.initializer.remove(b)
    del g.node[:]
    g.node.extend(nodes)
    m.opset_import.append(helper.make_opsetid(MS, 1))
    return m


def matmulnbits_forms():
    """x [2, 4, 64] through MatMulNBits nodes in the forms onnxruntime writes, then summed:
    int4 with a bias [32] (mm4, K 64, N 32, block 16: B [32, 4, 8]); int8 with zero points
    unpacked in A's type (mm8, K 64, N 32, block 64: B [32, 1, 64], zero points [32, 1]); a
    rank-2 input y [4, 64] (mm2, int4, block 32). No value_info: the outputs' shapes come from
    coda's MatMulNBits schema."""
    n = helper.make_node
    nodes = [
        n("MatMulNBits", ["x", "w4", "s4", "", "", "bias"], ["y4"], name="mm4", domain=MS,
          K=64, N=32, bits=4, block_size=16),
        n("MatMulNBits", ["x", "w8", "s8", "z8"], ["y8"], name="mm8", domain=MS, K=64, N=32,
          bits=8, block_size=64),
        n("Add", ["y4", "y8"], ["sum"], name="sum"),
        n("MatMulNBits", ["y", "w2", "s2"], ["y2"], name="mm2", domain=MS, K=64, N=32, bits=4,
          block_size=32),
    ]
    inits = [uint8("w4", 32, 4, 8), weight("s4", 32, 4), weight("bias", 32),
             uint8("w8", 32, 1, 64), weight("s8", 32, 1), weight("z8", 32, 1),
             uint8("w2", 32, 2, 16), weight("s2", 32, 2)]
    graph = helper.make_graph(nodes, "matmulnbits_forms",
                              [helper.make_tensor_value_info("x", F, [2, 4, 64]),
                               helper.make_tensor_value_info("y", F, [4, 64])],
                              [helper.make_tensor_value_info("sum", F, None),
                               helper.make_tensor_value_info("y2", F, None)], inits)
    return model(graph, extra_opsets=[helper.make_opsetid(MS, 1)])


def matmulnbits_errors():
    """x [4, 64] into five MatMulNBits nodes, each wrong in one way (every one is reported at
    its node): bits 3; block_size 24; B of the wrong shape; K 32 where x has 64 columns; a
    g_idx."""
    n = helper.make_node
    gidx = numpy_helper.from_array(np.zeros(64, dtype=np.int32), "gidx")
    nodes = [
        n("MatMulNBits", ["x", "w3", "s"], ["y0"], name="bits3", domain=MS, K=64, N=32, bits=3,
          block_size=32),
        n("MatMulNBits", ["x", "w", "s"], ["y1"], name="block24", domain=MS, K=64, N=32, bits=4,
          block_size=24),
        n("MatMulNBits", ["x", "wbad", "s"], ["y2"], name="bshape", domain=MS, K=64, N=32,
          bits=4, block_size=32),
        n("MatMulNBits", ["x", "w", "s"], ["y3"], name="k32", domain=MS, K=32, N=32, bits=4,
          block_size=32),
        n("MatMulNBits", ["x", "w", "s", "", "gidx"], ["y4"], name="gidx", domain=MS, K=64,
          N=32, bits=4, block_size=32),
    ]
    inits = [uint8("w3", 32, 2, 12), uint8("w", 32, 2, 16), uint8("wbad", 32, 2, 8),
             weight("s", 32, 2), gidx]
    graph = helper.make_graph(nodes, "matmulnbits_errors",
                              [helper.make_tensor_value_info("x", F, [4, 64])],
                              [helper.make_tensor_value_info(f"y{i}", F, None) for i in range(5)],
                              inits)
    return model(graph, extra_opsets=[helper.make_opsetid(MS, 1)])


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: make_test_onnx.py OUT_DIR")
    OUT = sys.argv[1]
    os.makedirs(OUT, exist_ok=True)
    save(transformer_block(), OUT, "transformer_block.onnx")
    save(exported_attention(32), OUT, "exported_attention.onnx")
    save(exported_attention(64), OUT, "exported_attention_s64.onnx")
    save(resnet_block(), OUT, "resnet_block.onnx")
    save(coverage(), OUT, "coverage.onnx")
    unsupported()
    save(dynamic_batch(), OUT, "dynamic_batch.onnx")
    save(dilated_conv(), OUT, "dilated_conv.onnx")
    save(conv_weight_chains(), OUT, "conv_weight_chains.onnx")
    save(function_lookalikes(), OUT, "function_lookalikes.onnx")
    save(qdq_block(), OUT, "qdq_block.onnx")
    # onnx.checker knows no com.microsoft ops: these three are saved unchecked.
    onnx.save(int4_llama_block(), os.path.join(OUT, "llama_block_int4.onnx"))
    onnx.save(matmulnbits_forms(), os.path.join(OUT, "matmulnbits_forms.onnx"))
    onnx.save(matmulnbits_errors(), os.path.join(OUT, "matmulnbits_errors.onnx"))
    # The first 60% of the ResNet block: cut inside its initializers.
    with open(os.path.join(OUT, "resnet_block.onnx"), "rb") as f:
        data = f.read()
    with open(os.path.join(OUT, "truncated.onnx"), "wb") as f:
        f.write(data[: len(data) * 6 // 10])
    with open(os.path.join(OUT, "not_onnx.onnx"), "w") as f:
        f.write("name: this is a YAML file, not an ONNX model\n")
    print(f"make_test_onnx.py: wrote 14 models to {OUT}")
