#include "workloads/cnn/cnn_zoo.h"

#include <array>
#include <string>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "core/check.h"
#include "workloads/builders.h"

namespace coda::workload::cnn {
namespace {

// A feature map in NCHW and the graph tensor holding it.
struct Fmap {
  TensorId id;
  std::uint64_t c = 1, h = 1, w = 1;
};

// Appends layers to a graph, each bound to the tensor the previous layer wrote. Names are
// "<prefix>.<layer>", e.g. "layer1.0.conv1".
class NetBuilder {
 public:
  NetBuilder(Graph& graph, const CnnOptions& options) : g_(graph), o_(options) {}

  Fmap input() {
    const std::vector<std::uint64_t> shape{o_.batch, o_.channels, o_.height, o_.width};
    return {g_.add_tensor({"input", shape, o_.dtype, TensorKind::Activation}), o_.channels,
            o_.height, o_.width};
  }

  // Square kernel, same stride and padding on both axes; no bias unless `bias`.
  Fmap conv(const Fmap& x, const std::string& name, std::uint64_t out_channels,
            std::uint64_t kernel, std::uint64_t stride, std::uint64_t pad,
            std::uint64_t groups = 1, bool bias = false) {
    const Conv2dParams p{.batch = o_.batch, .in_h = x.h, .in_w = x.w, .in_channels = x.c,
                         .filter_h = kernel, .filter_w = kernel, .out_channels = out_channels,
                         .stride_h = stride, .stride_w = stride, .pad_h = pad, .pad_w = pad,
                         .groups = groups};
    const std::uint64_t oh = conv_output_extent(x.h, kernel, stride, pad);
    const std::uint64_t ow = conv_output_extent(x.w, kernel, stride, pad);
    Fmap y{output(g_.add(make_conv2d(name, p, oh, ow, o_.dtype), {x.id})), out_channels, oh, ow};
    if (bias) y.id = channel_bias(y.id, {o_.batch, y.c, y.h, y.w}, name + ".bias");
    return y;
  }

  // Inference batch norm: a per-channel scale and shift (2 x channels parameters).
  Fmap batch_norm(const Fmap& x, const std::string& name) {
    return same(x, g_.add(make_normalization(name, Function::BatchNorm, shape(x), {1}, o_.dtype),
                          {x.id}));
  }

  Fmap relu(const Fmap& x, const std::string& name) {
    return same(x, g_.add(make_elementwise(name, Function::Relu, shape(x), o_.dtype), {x.id}));
  }

  // conv, batch norm, relu: the unit every network here is made of.
  Fmap conv_bn_relu(const Fmap& x, const std::string& name, std::uint64_t out_channels,
                    std::uint64_t kernel, std::uint64_t stride, std::uint64_t groups = 1) {
    const Fmap c = conv(x, name + ".conv", out_channels, kernel, stride, kernel / 2, groups);
    return relu(batch_norm(c, name + ".bn"), name + ".relu");
  }

  // Window `kernel`, `stride`, symmetric `pad`, output by the floor convention; or an explicit
  // output size (darknet's stride-1 max pool pads only the bottom and right edge).
  Fmap pool(const Fmap& x, const std::string& name, Function f, std::uint64_t kernel,
            std::uint64_t stride, std::uint64_t pad = 0, std::uint64_t out_h = 0,
            std::uint64_t out_w = 0) {
    const Pool2dParams p{.batch = o_.batch, .channels = x.c, .in_h = x.h, .in_w = x.w,
                         .kernel_h = kernel, .kernel_w = kernel, .stride_h = stride,
                         .stride_w = stride, .pad_h = pad, .pad_w = pad};
    if (out_h == 0) out_h = conv_output_extent(x.h, kernel, stride, pad);
    if (out_w == 0) out_w = conv_output_extent(x.w, kernel, stride, pad);
    return {output(g_.add(make_pool2d(name, f, p, out_h, out_w, o_.dtype), {x.id})), x.c, out_h,
            out_w};
  }

  Fmap add(const Fmap& a, const Fmap& b, const std::string& name) {
    CODA_CHECK(a.c == b.c && a.h == b.h && a.w == b.w);
    return same(a, g_.add(make_elementwise(name, Function::Add, shape(a), o_.dtype,
                                           {{TensorRole::Input, {}}}),
                          {a.id, b.id}));
  }

  // Mean over H and W: [N, C, H, W] -> [N, C] (the global average pool and the flatten).
  TensorId global_avg_pool(const Fmap& x, const std::string& name) {
    return output(
        g_.add(make_reduction(name, Function::Mean, shape(x), {2, 3}, o_.dtype), {x.id}));
  }

  // [N, C, H, W] -> [N, C*H*W], as torch.flatten(x, 1).
  TensorId flatten(const Fmap& x, const std::string& name) {
    return output(g_.add(make_data_movement(name, Function::Reshape, {shape(x)},
                                            {{o_.batch, x.c * x.h * x.w}}, o_.dtype),
                         {x.id}));
  }

  // Fully connected with bias: [N, in] x [in, out] + bias[out] -> [N, out].
  TensorId fc(TensorId x, const std::string& name, std::uint64_t in, std::uint64_t out) {
    const TensorId y = output(g_.add(make_gemm(name, o_.batch, out, in, o_.dtype), {x}));
    return channel_bias(y, {o_.batch, out}, name + ".bias");
  }

  TensorId relu(TensorId x, const std::vector<std::uint64_t>& shape, const std::string& name) {
    return output(g_.add(make_elementwise(name, Function::Relu, shape, o_.dtype), {x}));
  }

  // Nearest-neighbour upsampling by 2: a copy into a map twice the size.
  Fmap upsample2(const Fmap& x, const std::string& name) {
    const std::vector<std::uint64_t> out{o_.batch, x.c, 2 * x.h, 2 * x.w};
    return {output(g_.add(make_data_movement(name, Function::Copy, {shape(x)}, {out}, o_.dtype),
                          {x.id})),
            x.c, 2 * x.h, 2 * x.w};
  }

  // Concatenation along channels.
  Fmap concat(const Fmap& a, const Fmap& b, const std::string& name) {
    CODA_CHECK(a.h == b.h && a.w == b.w);
    const std::vector<std::uint64_t> out{o_.batch, a.c + b.c, a.h, a.w};
    return {output(g_.add(make_data_movement(name, Function::Concat, {shape(a), shape(b)}, {out},
                                             o_.dtype),
                          {a.id, b.id})),
            a.c + b.c, a.h, a.w};
  }

 private:
  std::vector<std::uint64_t> shape(const Fmap& x) const { return {o_.batch, x.c, x.h, x.w}; }
  // The tensor an op wrote: its last access is its only output.
  TensorId output(OpId op) const { return g_.ops[op.value].tensors.back(); }
  Fmap same(const Fmap& x, OpId op) const { return {output(op), x.c, x.h, x.w}; }

  // y + bias[channel], the channel being axis 1.
  TensorId channel_bias(TensorId y, const std::vector<std::uint64_t>& shape,
                        const std::string& name) {
    return output(g_.add(make_elementwise(name, Function::Add, shape, o_.dtype,
                                          {{TensorRole::Weight, {1}}}),
                         {y}));
  }

  Graph& g_;
  const CnnOptions& o_;
};

Graph new_graph(std::string name, std::string source) {
  Graph g;
  g.name = std::move(name);
  g.source = std::move(source);
  return g;
}

void check_options(std::string_view name, const CnnOptions& options) {
  Diagnostics diags;
  CODA_CHECK(validate(name, options, diags));
}

// ImageNet classes: every classifier here ends in a 1000-way fc.
constexpr std::uint64_t kClasses = 1000;

// ResNet: stem (7x7/2 conv, 3x3/2 max pool), four stages, global average pool, fc.
// `bottleneck`: 1x1, 3x3, 1x1 blocks with 4x expansion (ResNet-50); else two 3x3 (ResNet-18).
Graph resnet(const CnnOptions& options, bool bottleneck, std::string name,
             std::array<int, 4> blocks) {
  Graph g = new_graph(std::move(name),
                      "He et al. 2016, Deep Residual Learning for Image Recognition, table 1; "
                      "torchvision.models.resnet (v1.5: stride on the 3x3 conv)");
  NetBuilder b(g, options);
  Fmap x = b.conv_bn_relu(b.input(), "stem", 64, 7, 2);
  x = b.pool(x, "stem.maxpool", Function::MaxPool, 3, 2, 1);
  const std::uint64_t expansion = bottleneck ? 4 : 1;
  for (std::size_t stage = 0; stage < 4; ++stage) {
    const std::uint64_t width = 64ULL << stage;
    for (int block = 0; block < blocks[stage]; ++block) {
      const std::string p = fmt::format("layer{}.{}", stage + 1, block);
      const std::uint64_t stride = (stage > 0 && block == 0) ? 2 : 1;
      const std::uint64_t out = width * expansion;
      Fmap y;
      if (bottleneck) {
        y = b.conv_bn_relu(x, p + ".1", width, 1, 1);
        y = b.conv_bn_relu(y, p + ".2", width, 3, stride);
        y = b.batch_norm(b.conv(y, p + ".3.conv", out, 1, 1, 0), p + ".3.bn");
      } else {
        y = b.conv_bn_relu(x, p + ".1", width, 3, stride);
        y = b.batch_norm(b.conv(y, p + ".2.conv", out, 3, 1, 1), p + ".2.bn");
      }
      // A projection shortcut (1x1 conv + BN) where the shape changes, as torchvision does.
      Fmap shortcut = x;
      if (stride != 1 || x.c != out)
        shortcut = b.batch_norm(b.conv(x, p + ".downsample.conv", out, 1, stride, 0),
                                p + ".downsample.bn");
      x = b.relu(b.add(y, shortcut, p + ".add"), p + ".relu");
    }
  }
  const TensorId pooled = b.global_avg_pool(x, "avgpool");
  b.fc(pooled, "fc", x.c, kClasses);
  return g;
}

}  // namespace

bool validate(std::string_view name, const CnnOptions& options, Diagnostics& diags) {
  const auto before = diags.error_count();
  if (options.batch < 1) diags.error({}, "cnn.batch", "must be at least 1");
  if (options.channels < 1) diags.error({}, "cnn.channels", "must be at least 1");
  const std::uint64_t multiple = name == "vgg16" ? 224 : 32;
  const std::string why =
      name == "vgg16"
          ? "vgg16's adaptive 7x7 average pool is a plain pool only when the 32x-downsampled "
            "map is a multiple of 7"
          : "the network downsamples by 32";
  for (const auto& [field, value] :
       {std::pair{"cnn.height", options.height}, std::pair{"cnn.width", options.width}})
    if (value == 0 || value % multiple != 0)
      diags.error({}, field, fmt::format("{} is not a positive multiple of {}", value, multiple),
                  why + "; 224 fits every network");
  return diags.error_count() == before;
}

Graph resnet18(const CnnOptions& options) {
  check_options("resnet18", options);
  return resnet(options, false, "resnet18", {2, 2, 2, 2});
}

Graph resnet50(const CnnOptions& options) {
  check_options("resnet50", options);
  return resnet(options, true, "resnet50", {3, 4, 6, 3});
}

Graph mobilenet_v2(const CnnOptions& options) {
  check_options("mobilenet_v2", options);
  Graph g = new_graph("mobilenet_v2",
                      "Sandler et al. 2018, MobileNetV2: Inverted Residuals and Linear "
                      "Bottlenecks, table 2 (width 1.0); torchvision.models.mobilenet_v2");
  NetBuilder b(g, options);
  Fmap x = b.conv_bn_relu(b.input(), "features.0", 32, 3, 2);
  // Table 2: expansion t, output channels c, repeats n, first stride s.
  struct Stage {
    std::uint64_t t, c;
    int n;
    std::uint64_t s;
  };
  constexpr std::array<Stage, 7> kStages{{{1, 16, 1, 1},
                                          {6, 24, 2, 2},
                                          {6, 32, 3, 2},
                                          {6, 64, 4, 2},
                                          {6, 96, 3, 1},
                                          {6, 160, 3, 2},
                                          {6, 320, 1, 1}}};
  int index = 1;
  for (const Stage& st : kStages) {
    for (int i = 0; i < st.n; ++i, ++index) {
      const std::string p = fmt::format("features.{}", index);
      const std::uint64_t stride = i == 0 ? st.s : 1;
      const std::uint64_t hidden = x.c * st.t;
      Fmap y = x;
      if (st.t != 1) y = b.conv_bn_relu(y, p + ".expand", hidden, 1, 1);  // ReLU6 as Relu
      y = b.conv_bn_relu(y, p + ".dw", hidden, 3, stride, hidden);        // depthwise
      // Linear bottleneck: projection with batch norm and no activation.
      y = b.batch_norm(b.conv(y, p + ".project.conv", st.c, 1, 1, 0), p + ".project.bn");
      x = (stride == 1 && x.c == st.c) ? b.add(x, y, p + ".add") : y;
    }
  }
  x = b.conv_bn_relu(x, fmt::format("features.{}", index), 1280, 1, 1);
  const TensorId pooled = b.global_avg_pool(x, "avgpool");
  b.fc(pooled, "classifier", x.c, kClasses);  // dropout before it is absent at inference
  return g;
}

Graph vgg16(const CnnOptions& options) {
  check_options("vgg16", options);
  Graph g = new_graph("vgg16",
                      "Simonyan & Zisserman 2015, Very Deep Convolutional Networks for "
                      "Large-Scale Image Recognition, table 1, configuration D; "
                      "torchvision.models.vgg16");
  NetBuilder b(g, options);
  Fmap x = b.input();
  // Configuration D: 3x3 convs (pad 1, with bias, each followed by ReLU); 0 = 2x2/2 max pool.
  constexpr std::array<std::uint64_t, 18> kConfig{64,  64,  0,   128, 128, 0,   256, 256, 256,
                                                  0,   512, 512, 512, 0,   512, 512, 512, 0};
  int conv = 0, pool = 0;
  for (const std::uint64_t c : kConfig) {
    if (c == 0) {
      x = b.pool(x, fmt::format("pool{}", ++pool), Function::MaxPool, 2, 2);
      continue;
    }
    const std::string p = fmt::format("conv{}", ++conv);
    x = b.relu(b.conv(x, p, c, 3, 1, 1, 1, true), p + ".relu");
  }
  // torchvision's AdaptiveAvgPool2d((7, 7)): nothing to do at 224; at 224k a k x k pool.
  if (x.h != 7 || x.w != 7) {
    CODA_CHECK(x.h == x.w && x.h % 7 == 0);  // validate() allows only square multiples of 224
    x = b.pool(x, "avgpool", Function::AvgPool, x.h / 7, x.h / 7);
  }
  TensorId y = b.flatten(x, "flatten");
  const std::uint64_t features = x.c * x.h * x.w;  // 512 * 7 * 7 = 25088
  y = b.relu(b.fc(y, "fc6", features, 4096), {options.batch, 4096}, "fc6.relu");
  y = b.relu(b.fc(y, "fc7", 4096, 4096), {options.batch, 4096}, "fc7.relu");
  b.fc(y, "fc8", 4096, kClasses);
  return g;
}

Graph yolo_tiny(const CnnOptions& options) {
  check_options("yolo_tiny", options);
  Graph g = new_graph("yolo_tiny",
                      "YOLOv3-tiny: Redmon & Farhadi 2018, YOLOv3: An Incremental Improvement; "
                      "darknet cfg/yolov3-tiny.cfg");
  NetBuilder b(g, options);
  // Darknet layer numbers in the names. Each conv: 3x3 or 1x1, "same" padding, batch norm,
  // leaky ReLU (priced as Relu).
  Fmap x = b.input();
  constexpr std::array<std::uint64_t, 6> kWidths{16, 32, 64, 128, 256, 512};
  int layer = 0;
  Fmap route8;
  for (std::size_t i = 0; i < kWidths.size(); ++i) {
    x = b.conv_bn_relu(x, fmt::format("l{}", layer++), kWidths[i], 3, 1);
    if (i == 4) route8 = x;  // layer 8, concatenated into the second head
    if (i < 5) {
      x = b.pool(x, fmt::format("l{}.maxpool", layer++), Function::MaxPool, 2, 2);
    } else {
      // Layer 11: 2x2 max pool, stride 1; darknet pads one row and column at the bottom and
      // right, so the map keeps its size (the window reads one past the edge: padding).
      x = b.pool(x, fmt::format("l{}.maxpool", layer++), Function::MaxPool, 2, 1, 0, x.h, x.w);
    }
  }
  constexpr std::uint64_t kDetect = 255;  // 3 anchors x (80 classes + 4 box + 1 objectness)
  x = b.conv_bn_relu(x, "l12", 1024, 3, 1);
  const Fmap l13 = b.conv_bn_relu(x, "l13", 256, 1, 1);
  x = b.conv_bn_relu(l13, "l14", 512, 3, 1);
  b.conv(x, "l15", kDetect, 1, 1, 0, 1, true);  // linear, with bias; layer 16 is YOLO decode
  // Layer 17 routes back to layer 13 (no op: the tensor is read again).
  x = b.conv_bn_relu(l13, "l18", 128, 1, 1);
  x = b.upsample2(x, "l19.upsample");
  x = b.concat(x, route8, "l20.route");
  x = b.conv_bn_relu(x, "l21", 256, 3, 1);
  b.conv(x, "l22", kDetect, 1, 1, 0, 1, true);  // layer 23 is YOLO decode
  return g;
}

std::span<const std::string_view> cnn_names() {
  static constexpr std::array<std::string_view, 5> kNames{"resnet18", "resnet50", "mobilenet_v2",
                                                          "vgg16", "yolo_tiny"};
  return kNames;
}

std::optional<Graph> build_cnn(std::string_view name, const CnnOptions& options,
                               Diagnostics& diags) {
  using Builder = Graph (*)(const CnnOptions&);
  static constexpr std::array<std::pair<std::string_view, Builder>, 5> kBuilders{{
      {"resnet18", &resnet18},
      {"resnet50", &resnet50},
      {"mobilenet_v2", &mobilenet_v2},
      {"vgg16", &vgg16},
      {"yolo_tiny", &yolo_tiny},
  }};
  for (const auto& [known, build] : kBuilders) {
    if (known != name) continue;
    if (!validate(name, options, diags)) return std::nullopt;
    return build(options);
  }
  diags.error({}, "cnn.name", fmt::format("unknown network '{}'", name),
              fmt::format("known networks: {}", fmt::join(cnn_names(), ", ")));
  return std::nullopt;
}

std::optional<Graph> build_cnn(std::string_view name, const CnnOptions& options) {
  Diagnostics ignored;
  return build_cnn(name, options, ignored);
}

}  // namespace coda::workload::cnn
