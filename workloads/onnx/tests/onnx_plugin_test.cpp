// coda-onnx.so (onnx_plugin.h): what coda::workload_sources imports through the module is what
// the importer linked in gives, diagnostics included.

#include "workloads/onnx/onnx_plugin.h"

#include <cstdlib>
#include <filesystem>
#include <string>

#include <gtest/gtest.h>

#include "testing/graph_checks.h"

namespace coda::workload::onnx {
namespace {

std::filesystem::path model(const std::string& name) {
  const char* bin = std::getenv("CODA_BINARY_DIR");
  return std::filesystem::path(bin ? bin : "build") / "workloads" / "onnx" / "test_models" / name;
}

TEST(OnnxPlugin, ImportsWhatTheLinkedImporterImports) {
  const OnnxOptions options;  // fuse_functions on: its GELU is one op, counted in `functions`
  Diagnostics linked_diags;
  Diagnostics plugin_diags;
  const auto linked = import_onnx(model("transformer_block.onnx"), options, linked_diags);
  const auto plugin =
      import_onnx_via_plugin(model("transformer_block.onnx"), options, plugin_diags);
  ASSERT_TRUE(linked) << linked_diags.format_all();
  ASSERT_TRUE(plugin) << plugin_diags.format_all();
  EXPECT_EQ(plugin->graph.name, linked->graph.name);
  ASSERT_EQ(plugin->graph.ops.size(), linked->graph.ops.size());
  for (std::size_t i = 0; i < linked->graph.ops.size(); ++i)
    EXPECT_EQ(plugin->graph.ops[i].name, linked->graph.ops[i].name);
  EXPECT_EQ(total_macs(plugin->graph), total_macs(linked->graph));
  EXPECT_EQ(plugin->functions, linked->functions);
  EXPECT_EQ(testing::problems(plugin->graph), "");
}

TEST(OnnxPlugin, ReportsTheImportersDiagnostics) {
  const OnnxOptions options;
  const std::filesystem::path missing = model("no_such_model.onnx");
  Diagnostics linked_diags;
  Diagnostics plugin_diags;
  EXPECT_FALSE(import_onnx(missing, options, linked_diags));
  EXPECT_FALSE(import_onnx_via_plugin(missing, options, plugin_diags));
  EXPECT_TRUE(plugin_diags.has_errors());
  EXPECT_EQ(plugin_diags.format_all(), linked_diags.format_all());
}

}  // namespace
}  // namespace coda::workload::onnx
