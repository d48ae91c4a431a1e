#include "validation/case_list.h"

#include <string>
#include <utility>

#include <fmt/format.h>

namespace coda::validation {
namespace {

struct Divisibility {
  Kernel kernel;
  std::optional<DType> dtype;  // nullopt: every dtype
  std::string_view key;
  std::uint64_t multiple;
  std::string_view why;
};

// Sizes a kernel cannot run: its tiles have no edge handling (kernels/tiling.h).
constexpr Divisibility kDivisibility[] = {
    {Kernel::GemmWmma, std::nullopt, "m", 64, "its 64x64x32 block tile has no edge handling"},
    {Kernel::GemmWmma, std::nullopt, "n", 64, "its 64x64x32 block tile has no edge handling"},
    {Kernel::GemmWmma, std::nullopt, "k", 32, "its 64x64x32 block tile has no edge handling"},
    {Kernel::GemmInt8, std::nullopt, "m", 64, "its 64x64x64 block tile has no edge handling"},
    {Kernel::GemmInt8, std::nullopt, "n", 64, "its 64x64x64 block tile has no edge handling"},
    {Kernel::GemmInt8, std::nullopt, "k", 64, "its 64x64x64 block tile has no edge handling"},
    {Kernel::GemmCublasLt, DType::Int8, "m", 4, "cuBLASLt int8 needs leading dimensions of 4"},
    {Kernel::GemmCublasLt, DType::Int8, "n", 4, "cuBLASLt int8 needs leading dimensions of 4"},
    {Kernel::GemmCublasLt, DType::Int8, "k", 4, "cuBLASLt int8 needs leading dimensions of 4"},
    {Kernel::CopyBandwidth, std::nullopt, "elements", 4, "it moves float4 vectors"},
    {Kernel::L2Bandwidth, std::nullopt, "elements", 4, "it reads float4 vectors"},
};

std::string runnable_names(std::span<const std::pair<std::string_view, Kernel>> kernels) {
  std::string names;
  for (const auto& [name, kernel] : kernels)
    names += (names.empty() ? "" : ", ") + std::string(name);
  return names;
}

bool is_attention(Kernel k) {
  return k == Kernel::AttentionUnfused || k == Kernel::AttentionFlash ||
         k == Kernel::DecodeAttention;
}

void check_case(const YamlReader& item, Case& c, Diagnostics& diags) {
  const KernelInfo& ki = info(c.kernel);
  const std::string_view name = ki.name;
  for (const Divisibility& rule : kDivisibility) {
    if (rule.kernel != c.kernel || (rule.dtype && *rule.dtype != c.dtype)) continue;
    const std::uint64_t v = shape_value(c.shape, rule.key);
    if (v % rule.multiple != 0) {
      diags.error(item.at(rule.key),
                  fmt::format("{} is not a multiple of {}, which {} needs ({})", v, rule.multiple,
                              name, rule.why),
                  fmt::format("use e.g. {}", (v / rule.multiple + 1) * rule.multiple));
    }
  }
  if (is_attention(c.kernel) && item.has("head_dim") && c.shape.head_dim != 64 &&
      c.shape.head_dim != 128) {
    diags.error(item.at("head_dim"),
                fmt::format("{} is not a head size {} is built for", c.shape.head_dim, name),
                "valid: 64, 128");
  }
  if (ki.shape == ShapeKind::Conv && item.has("height") && item.has("width") &&
      item.has("filter_size") &&
      (conv_out_extent(c.shape, c.shape.height) == 0 ||
       conv_out_extent(c.shape, c.shape.width) == 0)) {
    diags.error(item.at("filter_size"),
                fmt::format("a {0}x{0} filter does not fit a {1}x{2} input padded by {3}",
                            c.shape.filter_size, c.shape.height, c.shape.width, c.shape.pad),
                "use a smaller filter_size or a larger pad");
  }
}

std::optional<Case> read_case(const YamlReader& item, const Case& defaults,
                              std::span<const std::pair<std::string_view, Kernel>> kernels,
                              Diagnostics& diags) {
  if (!item.expect_map(diags)) return std::nullopt;
  const auto errors_before = diags.error_count();
  Case c = defaults;
  c.where = item.location();
  // A published-only kernel is named as such, not as a typo of a runnable one.
  if (item.has("kernel") && item.at("kernel").is_scalar()) {
    const std::string name = item.at("kernel").node().Scalar();
    for (const KernelInfo& k : kernel_catalog()) {
      if (k.published_only && k.name == name) {
        diags.error(item.at("kernel"),
                    fmt::format("\"{}\" is a kernel of published tables: coda-bench cannot run "
                                "it (it exists for rows of validation/published/)",
                                name),
                    fmt::format("coda-bench runs: {}", runnable_names(kernels)));
        return std::nullopt;
      }
    }
  }
  if (!item.required_enum("kernel", c.kernel, EnumTable<Kernel>(kernels), diags)) {
    // Without the kernel, the other keys cannot be judged; say nothing more about this case.
    return std::nullopt;
  }
  const KernelInfo& ki = info(c.kernel);
  c.dtype = ki.dtypes.front();
  std::vector<std::pair<std::string_view, DType>> dtypes;
  for (DType t : ki.dtypes) dtypes.emplace_back(dtype_name(t), t);
  item.optional_enum("dtype", c.dtype, EnumTable<DType>(dtypes), diags);

  for (std::string_view key : shape_keys(ki.shape)) {
    std::uint64_t* field = shape_field(c.shape, key);
    const bool has_default = shape_key_optional(ki.shape, key);
    if (has_default ? !item.optional(key, *field, diags) : !item.required(key, *field, diags))
      continue;
    if (*field == 0 && !shape_key_may_be_zero(key)) {
      diags.error(item.at(key), "must be at least 1");
    }
  }
  item.optional("repetitions", c.repetitions, diags);
  item.optional("warmup", c.warmup, diags);
  if (item.has("repetitions") && c.repetitions == 0)
    diags.error(item.at("repetitions"),
                "must be at least 1", "the median of the timed runs is reported");
  item.reject_unknown_keys(diags);
  if (diags.error_count() == errors_before) check_case(item, c, diags);
  if (diags.error_count() != errors_before) return std::nullopt;
  return c;
}

}  // namespace

std::optional<CaseList> read_case_list(const YamlReader& root, Diagnostics& diags) {
  if (!root.expect_map(diags)) return std::nullopt;
  const auto errors_before = diags.error_count();
  std::uint32_t version = 0;
  if (root.required("schema_version", version, diags) && version != kCaseListSchemaVersion) {
    diags.error(root.at("schema_version"),
                fmt::format("unsupported version {}", version),
                fmt::format("this coda-bench reads version {}", kCaseListSchemaVersion));
  }
  CaseList list;
  Case defaults;
  root.optional("seed", list.seed, diags);
  root.optional("check_samples", list.check_samples, diags);
  root.optional("repetitions", defaults.repetitions, diags);
  root.optional("warmup", defaults.warmup, diags);
  if (root.has("repetitions") && defaults.repetitions == 0)
    diags.error(root.at("repetitions"),
                "must be at least 1", "the median of the timed runs is reported");
  if (root.has("check_samples") && list.check_samples == 0)
    diags.error(root.at("check_samples"),
                "must be at least 1", "every case is checked against its CPU reference");

  // Only what coda-bench runs: a typo is matched (did you mean) among these alone.
  std::vector<std::pair<std::string_view, Kernel>> kernels;
  for (const KernelInfo& k : kernel_catalog())
    if (!k.published_only) kernels.emplace_back(k.name, k.kernel);

  if (root.has("cases")) {
    const YamlReader cases = root.at("cases");
    if (cases.expect_sequence(diags)) {
      for (const YamlReader& item : cases.items()) {
        if (auto c = read_case(item, defaults, kernels, diags)) list.cases.push_back(*c);
      }
      if (cases.items().empty())
        diags.error(cases, "no cases", "list at least one case");
    }
  } else {
    diags.error(root, "missing required key 'cases'",
                "list the cases to run, e.g. cases: [{kernel: gemm_tiled, m: 64, n: 64, k: 64}]");
  }
  root.reject_unknown_keys(diags);
  if (diags.error_count() != errors_before) return std::nullopt;
  return list;
}

std::optional<CaseList> load_case_list(const std::filesystem::path& file, Diagnostics& diags) {
  auto doc = YamlDocument::load(file, diags);
  if (!doc) return std::nullopt;
  return read_case_list(doc->root(), diags);
}

}  // namespace coda::validation
