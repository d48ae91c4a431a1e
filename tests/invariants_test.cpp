// Invariants that hold for every bundled workload on every bundled architecture preset, whatever
// the model's details: checked through sim::run_files, the path `coda run` takes.
//
//   cycles >= compute_cycles >= ceil(MACs / MAC units), stall = cycles - compute
//   compute utilization and mapping (or wave) efficiency in (0, 1]; energy above zero
//   DRAM traffic >= the compulsory traffic: each operand matrix moves at least once, so for an op
//   seen as `batch` GEMMs [M' x K'] x [K' x N'] (batch = conv groups, heads):
//     ifmap reads >= M' K' batch words, filter reads >= K' N' batch words,
//     ofmap writes >= M' N' batch words
//   SRAM (L2) traffic >= DRAM traffic (everything from DRAM passes through it)
//   per-op cost totals equal the sum of the operands' traffic; run totals equal the sum over ops
// An arch that lacks the workloads' int8 runs them at its first matrix precision.

#include <algorithm>
#include <filesystem>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "arch/arch_spec.h"
#include "arch/hardware_model.h"
#include "cli/check_config.h"
#include "mapper/schedule.h"
#include "sim/driver.h"
#include "workloads/importers.h"

namespace coda {
namespace {

namespace fs = std::filesystem;

std::vector<fs::path> files_under(const fs::path& dir, std::initializer_list<const char*> exts) {
  std::vector<fs::path> out;
  for (const auto& entry : fs::recursive_directory_iterator(dir)) {
    if (!entry.is_regular_file()) continue;
    for (const char* ext : exts)
      if (entry.path().extension() == ext) out.push_back(entry.path());
  }
  std::sort(out.begin(), out.end());
  return out;
}

const results::TensorTraffic* find_traffic(const results::OpResult& op, std::string_view tensor,
                                           std::string_view level) {
  for (const auto& t : op.traffic)
    if (t.tensor == tensor && t.level == level) return &t;
  return nullptr;
}

// The precision the run uses: the workload's own where the arch computes it (schema-1 arrays
// run everything), else the arch's first matrix precision.
std::optional<DataType> run_precision(const arch::HardwareModel& hw) {
  if (hw.spec().word_size || hw.peak_ops_per_second(DataType::Int8) > 0) return std::nullopt;
  return hw.matrix_precisions().front();
}

// Systolic ops: per-operand traffic, compulsory traffic and SRAM >= DRAM.
void check_systolic_op(const results::OpResult& op, const workload::GemmView& g,
                       std::uint64_t word) {
  const std::uint64_t compulsory_ifmap = g.m * g.k * g.batch * word;
  const std::uint64_t compulsory_filter = g.k * g.n * g.batch * word;
  const std::uint64_t compulsory_ofmap = g.m * g.n * g.batch * word;
  const auto* ifmap_dram = find_traffic(op, "ifmap", "dram");
  const auto* filter_dram = find_traffic(op, "filter", "dram");
  const auto* ofmap_dram = find_traffic(op, "ofmap", "dram");
  ASSERT_TRUE(ifmap_dram && filter_dram && ofmap_dram);
  EXPECT_GE(ifmap_dram->reads.value, compulsory_ifmap);
  EXPECT_GE(filter_dram->reads.value, compulsory_filter);
  EXPECT_GE(ofmap_dram->writes.value, compulsory_ofmap);
  for (const char* tensor : {"ifmap", "filter", "ofmap"}) {
    const auto* sram = find_traffic(op, tensor, "sram");
    const auto* dram = find_traffic(op, tensor, "dram");
    ASSERT_TRUE(sram && dram) << tensor;
    EXPECT_GE(sram->reads, dram->reads) << tensor;
    EXPECT_GE(sram->writes, dram->writes) << tensor;
  }
}

// Tensor-core ops: A and B are read from DRAM and C written at least once.
void check_tensor_core_op(const results::OpResult& op, const workload::GemmView& g,
                          std::uint64_t bytes) {
  EXPECT_GE(op.cost.dram_reads.value, (g.m * g.k + g.k * g.n) * g.batch * bytes);
  EXPECT_GE(op.cost.dram_writes.value, g.m * g.n * g.batch);
  EXPECT_GE(op.cost.sram_reads, op.cost.dram_reads);  // everything from DRAM passes the L2
}

void check_run(const fs::path& arch_file, const fs::path& workload_file) {
  SCOPED_TRACE(arch_file.string() + " x " + workload_file.string());
  Diagnostics diags;
  const auto arch = arch::load_arch(arch_file, diags);
  const auto graph = workload::load_workload(workload_file, diags);
  ASSERT_TRUE(arch && graph) << diags.format_all();
  const arch::HardwareModel hw(arch->spec);
  const auto precision = run_precision(hw);
  const auto run = sim::run_files({arch_file, workload_file, "analytical", false, precision}, diags);
  ASSERT_TRUE(run.has_value()) << diags.format_all();
  EXPECT_FALSE(diags.has_errors());
  ASSERT_EQ(run->ops.size(), graph->ops.size());  // the bundled layer lists are contractions
  ASSERT_TRUE(run->skipped.empty());
  const std::uint64_t pes = run->processing_elements;
  ASSERT_GT(pes, 0u);
  const std::uint64_t bytes = (bit_width(precision.value_or(DataType::Int8)) + 7) / 8;

  results::Cost sum;
  for (std::size_t i = 0; i < run->ops.size(); ++i) {
    const results::OpResult& op = run->ops[i];
    const workload::GemmView g = workload::gemm_view(graph->ops[i]);
    SCOPED_TRACE(op.name);
    EXPECT_EQ(op.name, graph->ops[i].name);
    const results::Cost& c = op.cost;
    EXPECT_EQ(c.macs, g.batch * g.m * g.n * g.k);
    EXPECT_GE(c.cycles, c.compute_cycles);
    EXPECT_GE(c.compute_cycles.value, (c.macs + pes - 1) / pes);
    EXPECT_EQ(c.stall_cycles.value, c.cycles.value - c.compute_cycles.value);
    EXPECT_GT(op.compute_utilization, 0.0);
    EXPECT_LE(op.compute_utilization, 1.0 + 1e-12);
    EXPECT_GT(op.mapping_efficiency, 0.0);
    EXPECT_LE(op.mapping_efficiency, 1.0);
    EXPECT_GT(c.energy.value, 0.0);  // at least the MACs' dynamic energy

    if (op.unit == "systolic") {
      check_systolic_op(op, g, hw.word_bytes());
      Bytes sram_reads, sram_writes, dram_reads, dram_writes;
      for (const auto& t : op.traffic) {
        (t.level == "sram" ? sram_reads : dram_reads) += t.reads;
        (t.level == "sram" ? sram_writes : dram_writes) += t.writes;
      }
      EXPECT_EQ(c.sram_reads, sram_reads);
      EXPECT_EQ(c.sram_writes, sram_writes);
      EXPECT_EQ(c.dram_reads, dram_reads);
      EXPECT_EQ(c.dram_writes, dram_writes);
    } else {
      EXPECT_EQ(op.unit, "tensor_core");
      check_tensor_core_op(op, g, bytes);
    }
    sum = sum + c;
  }
  EXPECT_EQ(run->total.cycles, sum.cycles);
  EXPECT_EQ(run->total.macs, sum.macs);
  EXPECT_EQ(run->total.dram_reads, sum.dram_reads);
  EXPECT_NEAR(run->total.energy.value, sum.energy.value, 1e-9 * sum.energy.value);
}

TEST(Invariants, EveryBundledWorkloadOnEveryPreset) {
  const auto archs = files_under("configs/arch", {".yaml"});
  // Every file check-config reads as a workload (a .csv, or YAML with `layers:`); files in
  // formats the run path does not read yet are left out here.
  std::vector<fs::path> workloads;
  for (const auto& file : files_under("configs/workloads", {".yaml", ".csv"}))
    if (cli::config_kind(file) == cli::ConfigKind::Workload) workloads.push_back(file);
  ASSERT_GE(archs.size(), 5U);
  ASSERT_GE(workloads.size(), 9U);
  for (const auto& arch : archs)
    for (const auto& workload : workloads) check_run(arch, workload);
}

}  // namespace
}  // namespace coda
