// coda's native YAML layer list (see docs/workloads.md, "Layer list").

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <fmt/format.h>

#include "workloads/builders.h"
#include "workloads/importers.h"

namespace coda::workload {
namespace {

constexpr std::uint64_t kSchemaVersion = 1;
// Larger sizes are surely a typo; keeping each below 2^31 keeps MAC counts far from overflow.
constexpr std::uint64_t kMaxValue = (std::uint64_t{1} << 31) - 1;

// A value given as one number (both directions) or as a [height, width] pair.
struct HeightWidth {
  std::uint64_t h = 0;
  std::uint64_t w = 0;
};

// Reads `key` if present; returns whether a valid value was read (errors are reported).
bool read_hw(const YamlReader& map, std::string_view key, HeightWidth& out, Diagnostics& diags) {
  const YamlReader node = map.at(key);
  if (node.is_sequence()) {
    const auto items = node.items();
    if (items.size() != 2) {
      diags.error(node,
                  fmt::format("expected a [height, width] pair, found a list of {}", items.size()),
                  fmt::format("write e.g. {}: [3, 3], or {}: 3 for both", key, key));
      return false;
    }
    const bool h_ok = items[0].read(out.h, diags);
    const bool w_ok = items[1].read(out.w, diags);
    return h_ok && w_ok;
  }
  if (!node.is_scalar()) {
    diags.error(node, "expected a number or a [height, width] pair",
                fmt::format("write e.g. {}: [3, 3], or {}: 3 for both", key, key));
    return false;
  }
  std::uint64_t both = 0;
  if (!node.read(both, diags)) return false;
  out = {both, both};
  return true;
}

// Reports a value below `min` or above kMaxValue at `key`; returns whether it is in range.
bool check_range(const YamlReader& map, std::string_view key, std::uint64_t value,
                 std::uint64_t min, Diagnostics& diags) {
  if (value >= min && value <= kMaxValue) return true;
  const YamlReader node = map.at(key);
  if (value < min)
    diags.error(node,
                fmt::format("must be at least {}, not {}", min, value));
  else
    diags.error(node,
                fmt::format("{} is out of range (at most {})", value, kMaxValue));
  return false;
}

bool check_range(const YamlReader& map, std::string_view key, HeightWidth value,
                 std::uint64_t min, Diagnostics& diags) {
  if (value.h >= min && value.w >= min && value.h <= kMaxValue && value.w <= kMaxValue)
    return true;
  const YamlReader node = map.at(key);
  if (value.h < min || value.w < min)
    diags.error(node,
                fmt::format("must be at least {}, not [{}, {}]", min, value.h, value.w));
  else
    diags.error(node,
                fmt::format("[{}, {}] is out of range (at most {})", value.h, value.w, kMaxValue));
  return false;
}

std::optional<Op> read_conv2d(const YamlReader& conv, const std::string& name,
                              Diagnostics& diags) {
  if (!conv.expect_map(diags)) return std::nullopt;
  const std::size_t errors_before = diags.error_count();
  HeightWidth input, kernel, stride{1, 1}, padding{0, 0};
  std::uint64_t channels = 0, filters = 0, batch = 1, groups = 1;
  bool ok = true;
  // Reads a key (reporting it if missing and required) and checks its range.
  const auto number = [&](std::string_view key, std::uint64_t& out, bool required) {
    if (!required && !conv.has(key)) return;
    ok = conv.required(key, out, diags) && check_range(conv, key, out, 1, diags) && ok;
  };
  const auto pair = [&](std::string_view key, HeightWidth& out, bool required,
                        std::uint64_t min) {
    if (!conv.has(key)) {
      std::string unused;
      if (required) ok = conv.required(key, unused, diags);  // reports the missing key
      return;
    }
    ok = read_hw(conv, key, out, diags) && check_range(conv, key, out, min, diags) && ok;
  };
  pair("input", input, true, 1);
  number("channels", channels, true);
  number("filters", filters, true);
  pair("kernel", kernel, true, 1);
  pair("stride", stride, false, 1);
  pair("padding", padding, false, 0);
  number("batch", batch, false);
  number("groups", groups, false);
  conv.reject_unknown_keys(diags);
  if (!ok || diags.error_count() != errors_before) return std::nullopt;

  if (channels % groups != 0) {
    diags.error(conv.at("channels"),
                fmt::format("{} channels do not split into {} groups", channels, groups),
                "channels must be a multiple of groups");
    ok = false;
  }
  if (filters % groups != 0) {
    diags.error(conv.at("filters"),
                fmt::format("{} filters do not split into {} groups", filters, groups),
                "filters must be a multiple of groups");
    ok = false;
  }
  const YamlReader kernel_node = conv.at("kernel");
  if (kernel.h > input.h + 2 * padding.h) {
    diags.error(kernel_node,
                fmt::format("kernel height {} is larger than the padded input height {} "
                            "(input {} + 2 x padding {})",
                            kernel.h, input.h + 2 * padding.h, input.h, padding.h));
    ok = false;
  }
  if (kernel.w > input.w + 2 * padding.w) {
    diags.error(kernel_node,
                fmt::format("kernel width {} is larger than the padded input width {} "
                            "(input {} + 2 x padding {})",
                            kernel.w, input.w + 2 * padding.w, input.w, padding.w));
    ok = false;
  }
  if (!ok) return std::nullopt;

  Conv2dParams p;
  p.batch = batch;
  p.in_h = input.h;
  p.in_w = input.w;
  p.in_channels = channels;
  p.filter_h = kernel.h;
  p.filter_w = kernel.w;
  p.out_channels = filters;
  p.stride_h = stride.h;
  p.stride_w = stride.w;
  p.pad_h = padding.h;
  p.pad_w = padding.w;
  p.groups = groups;
  return make_conv2d(name, p, conv_output_extent(input.h, kernel.h, stride.h, padding.h),
                     conv_output_extent(input.w, kernel.w, stride.w, padding.w));
}

std::optional<Op> read_gemm(const YamlReader& gemm, const std::string& name, Diagnostics& diags) {
  if (!gemm.expect_map(diags)) return std::nullopt;
  std::uint64_t m = 0, n = 0, k = 0, batch = 1;
  bool ok = gemm.required("m", m, diags) && check_range(gemm, "m", m, 1, diags);
  ok = gemm.required("n", n, diags) && check_range(gemm, "n", n, 1, diags) && ok;
  ok = gemm.required("k", k, diags) && check_range(gemm, "k", k, 1, diags) && ok;
  if (gemm.has("batch"))
    ok = gemm.required("batch", batch, diags) && check_range(gemm, "batch", batch, 1, diags) &&
         ok;
  const std::size_t errors_before = diags.error_count();
  gemm.reject_unknown_keys(diags);
  if (!ok || diags.error_count() != errors_before) return std::nullopt;
  return batch == 1 ? make_gemm(name, m, n, k) : make_batched_gemm(name, batch, m, n, k);
}

std::optional<Op> read_layer(const YamlReader& layer, std::string& name, Diagnostics& diags) {
  if (!layer.expect_map(diags)) return std::nullopt;
  const std::size_t errors_before = diags.error_count();
  if (layer.required("name", name, diags) && name.empty())
    diags.error(layer.at("name"), "must not be empty",
                "name every layer, e.g. conv1");
  const bool has_conv = layer.has("conv2d");
  const bool has_gemm = layer.has("gemm");
  const std::size_t errors_before_keys = diags.error_count();
  layer.reject_unknown_keys(diags);
  const bool unknown_keys = diags.error_count() != errors_before_keys;
  if (has_conv && has_gemm) {
    diags.error(layer, "has both 'conv2d' and 'gemm'",
                "a layer is exactly one op: move one of them into a layer of its own");
    return std::nullopt;
  }
  if (!has_conv && !has_gemm) {
    if (!unknown_keys)  // a misspelt 'conv2d' already has its did-you-mean
      diags.error(layer, "needs one of 'conv2d' or 'gemm'",
                  "write e.g. gemm: {m: 1, n: 1000, k: 512}");
    return std::nullopt;
  }
  auto op = has_conv ? read_conv2d(layer.at("conv2d"), name, diags)
                     : read_gemm(layer.at("gemm"), name, diags);
  if (!op || diags.error_count() != errors_before) return std::nullopt;
  op->source = layer.location();
  return op;
}

// Appends `op`, binding its input to the previous layer's output when they have the same shape
// and element type (the layer reads what its predecessor wrote), else to a fresh tensor. A layer
// whose input differs (after a pooling layer the list leaves out, or a shortcut's downsample
// conv) starts from a tensor of its own, which is a graph input.
void add_linked(Graph& graph, Op op) {
  std::vector<TensorId> bound;
  if (!graph.ops.empty() && !op.space.accesses.empty() &&
      op.space.accesses.front().role == TensorRole::Input) {
    const Op& previous = graph.ops.back();
    for (std::size_t a = 0; a < previous.space.accesses.size(); ++a) {
      const TensorAccess& out = previous.space.accesses[a];
      if (out.role != TensorRole::Output || a >= previous.tensors.size()) continue;
      const TensorAccess& in = op.space.accesses.front();
      if (out.shape == in.shape && out.dtype == in.dtype) bound.push_back(previous.tensors[a]);
      break;
    }
  }
  graph.add(std::move(op), std::move(bound));
}

}  // namespace

std::optional<Graph> read_layer_list(const YamlReader& root, Diagnostics& diags) {
  if (!root.expect_map(diags)) return std::nullopt;
  const std::size_t errors_before = diags.error_count();
  Graph graph;
  std::uint64_t schema_version = 0;
  if (root.required("schema_version", schema_version, diags) && schema_version != kSchemaVersion)
    diags.error(root.at("schema_version"),
                fmt::format("unsupported schema_version {}", schema_version),
                fmt::format("this version of coda reads schema_version {}", kSchemaVersion));
  root.required("name", graph.name, diags);
  root.optional("source", graph.source, diags);
  if (root.has("layers")) {
    const YamlReader layers = root.at("layers");
    if (layers.expect_sequence(diags)) {
      const auto items = layers.items();
      if (items.empty())
        diags.error(layers, "has no layers",
                    "list at least one layer, e.g. - {name: fc, gemm: {m: 1, n: 1000, k: 512}}");
      std::map<std::string, SourceLocation, std::less<>> first_seen;
      for (const YamlReader& layer : items) {
        std::string name;
        auto op = read_layer(layer, name, diags);
        if (!name.empty()) {
          const auto [it, inserted] = first_seen.emplace(name, layer.at("name").location());
          if (!inserted)
            diags.error(layer.at("name"),
                        fmt::format("duplicate layer name '{}' (first at line {})", name,
                                    it->second.line),
                        "layer names must be unique");
        }
        if (op) add_linked(graph, std::move(*op));
      }
    }
  } else {
    std::string unused;
    root.required("layers", unused, diags);  // reports the missing key
  }
  root.reject_unknown_keys(diags);
  if (diags.error_count() != errors_before) return std::nullopt;
  return graph;
}

}  // namespace coda::workload
