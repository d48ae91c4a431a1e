#pragma once
// Convolutional networks built as connected Graphs (every op bound to the tensors it reads and
// writes, so verify() is clean), at one batch size and input size, for inference. Each builder
// follows a named reference, layer for layer; docs/cnn_onnx.md lists them and the parameter and
// MAC counts the tests check against those references.
//
// Conventions shared by every network here:
//   - parameters are the Weight tensors: conv filters, fc matrices, the biases the reference
//     network has (VGG convs, every fc, YOLO's linear detection convs), and per batch norm its
//     scale and shift (2 x channels, what torchvision counts as parameters; running mean and
//     variance are buffers there and are not counted here);
//   - ReLU6 (MobileNetV2) and leaky ReLU (YOLO) are priced as Relu (one compare per element);
//   - dropout is absent (inference), and so are a detector's decode steps (YOLO layers).

#include <cstdint>
#include <optional>
#include <span>
#include <string_view>

#include "core/diagnostics.h"
#include "workloads/data_type.h"
#include "workloads/graph.h"

namespace coda::workload::cnn {

struct CnnOptions {
  std::uint64_t batch = 1;
  std::uint64_t channels = 3;   // input image channels
  std::uint64_t height = 224;   // input image rows
  std::uint64_t width = 224;    // input image columns
  DataType dtype = DataType::Int8;
};

// Checks options for network `name` (a name from cnn_names()): batch and channels at least 1,
// height and width positive multiples of 32 (every network here downsamples by 32, and YOLO's
// upsample-and-concat needs the halvings exact); vgg16 also needs them to be multiples of 224
// (its adaptive 7x7 average pool is then a plain pool). Returns whether they are valid, each
// problem a Diagnostic with path "cnn.<field>".
bool validate(std::string_view name, const CnnOptions& options, Diagnostics& diags);

// The networks. Precondition: validate(name, options) holds (CODA_CHECK otherwise).
// He et al. 2016, "Deep Residual Learning for Image Recognition", table 1, 18-layer; as
// torchvision.models.resnet18.
Graph resnet18(const CnnOptions& options = {});
// Table 1, 50-layer, with torchvision's "v1.5" bottleneck (stride 2 on the 3x3 conv, not the
// first 1x1); torchvision.models.resnet50.
Graph resnet50(const CnnOptions& options = {});
// Sandler et al. 2018, "MobileNetV2: Inverted Residuals and Linear Bottlenecks", table 2, width
// 1.0; as torchvision.models.mobilenet_v2.
Graph mobilenet_v2(const CnnOptions& options = {});
// Simonyan & Zisserman 2015, "Very Deep Convolutional Networks for Large-Scale Image
// Recognition", table 1, configuration D (no batch norm); torchvision.models.vgg16.
Graph vgg16(const CnnOptions& options = {});
// YOLOv3-tiny: Redmon & Farhadi 2018, "YOLOv3: An Incremental Improvement", as darknet's
// cfg/yolov3-tiny.cfg (80 classes, 3 anchors per scale: 255 = 3 x (80 + 5) detection channels).
// darknet's input is 416 x 416; pass height = width = 416 for it.
Graph yolo_tiny(const CnnOptions& options = {});

// Every name build_cnn accepts: "resnet18", "resnet50", "mobilenet_v2", "vgg16", "yolo_tiny".
std::span<const std::string_view> cnn_names();

// The network `name` with `options`. Unknown names and invalid options are Diagnostics (an
// unknown name lists the known ones); returns nullopt then.
std::optional<Graph> build_cnn(std::string_view name, const CnnOptions& options,
                               Diagnostics& diags);
// As above, without the reasons: nullopt for an unknown name or invalid options.
std::optional<Graph> build_cnn(std::string_view name, const CnnOptions& options);

}  // namespace coda::workload::cnn
