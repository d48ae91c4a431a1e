#include "sim/analytical/systolic_model.h"

#include <algorithm>
#include <array>
#include <cmath>

#include "core/check.h"
#include "sim/analytical/systolic_traffic.h"

namespace coda::sim::analytical {
namespace {

using mapper::SystolicMapping;

constexpr std::array<const char*, 3> kOperandNames{"ifmap", "filter", "ofmap"};

}  // namespace

double pe_rate(const arch::HardwareModel& hw, DataType precision) {
  const arch::ComputeUnitSpec* unit = hw.matrix_unit();
  if (unit == nullptr || hw.spec().schema_version == 1) return 1.0;
  const auto rate = unit->rates.find(precision);
  return rate == unit->rates.end() || rate->second <= 0 ? 1.0 : rate->second;
}

std::uint64_t fold_cycles(const SystolicMapping& m, const arch::HardwareModel& hw, double rate) {
  const std::uint64_t r = hw.rows(), c = hw.cols();
  const auto stream = static_cast<std::uint64_t>(std::ceil(static_cast<double>(m.t) / rate));
  return m.dataflow == arch::Dataflow::OutputStationary ? stream + r + c - 2
                                                        : stream + 2 * r + c - 2;
}

results::OpResult evaluate_systolic(const mapper::ScheduledOp& op, const arch::HardwareModel& hw) {
  const SystolicMapping& m = op.mapping;
  const std::uint64_t rows = hw.rows(), cols = hw.cols();
  const std::uint64_t folds_per_group = m.row_folds * m.col_folds;
  const std::uint64_t groups = m.gemm.batch;
  const double rate = pe_rate(hw, op.precision);
  const std::uint64_t per_fold = fold_cycles(m, hw, rate);

  results::OpResult out;
  out.name = op.name;
  out.unit = "systolic";
  out.mapping = {{"Sr", m.sr},          {"Sc", m.sc},          {"T", m.t},
                 {"row_folds", m.row_folds}, {"col_folds", m.col_folds}, {"groups", groups}};
  if (m.arrays > 1) out.mapping.emplace_back("arrays", m.arrays);
  out.cost.macs = op.macs;
  out.cost.compute_cycles = Cycles{groups * folds_per_group * per_fold};

  // What each fold moves (systolic_traffic.h): the same for every group.
  const SystolicTraffic traffic =
      systolic_traffic(m, hw, {op.on_chip.input, op.on_chip.weight, op.on_chip.output});
  const auto fold_io = [&](std::uint64_t index) {  // index over all groups' folds
    return traffic.folds[index % folds_per_group];
  };

  // Time the folds on one DRAM channel of `bw` bytes per cycle (see the header). Unlimited
  // bandwidth still walks the folds to count the traffic.
  // Each of the arrays running a slice in parallel has an equal share of the chip's DRAM.
  std::optional<double> bw = hw.achievable_dram_bytes_per_cycle();
  if (bw) *bw /= static_cast<double>(m.arrays);
  const double b = bw.value_or(1.0);
  const double compute_per_fold = static_cast<double>(per_fold);
  const std::uint64_t folds = groups * folds_per_group;
  FoldBytes current = fold_io(0);
  double time = hw.double_buffered() ? static_cast<double>(current.in()) / b : 0.0;
  double previous_out = 0.0;
  for (std::uint64_t i = 0; i < folds; ++i) {
    const FoldBytes next = i + 1 < folds ? fold_io(i + 1) : FoldBytes{};
    const auto in = static_cast<double>(current.in());
    const auto out_bytes = static_cast<double>(current.ofmap);
    if (hw.double_buffered())
      time += std::max(compute_per_fold, (static_cast<double>(next.in()) + previous_out) / b);
    else
      time += (in + out_bytes) / b + compute_per_fold;
    previous_out = out_bytes;
    current = next;
  }
  if (hw.double_buffered()) time += previous_out / b;

  const std::uint64_t compute = out.cost.compute_cycles.value;
  const std::uint64_t total =
      bw ? std::max<std::uint64_t>(compute, static_cast<std::uint64_t>(std::ceil(time - 1e-9)))
         : compute;
  out.cost.cycles = Cycles{total};
  out.cost.stall_cycles = Cycles{total - compute};

  // Every group moves the same bytes, and every array its own slice's.
  for (std::size_t i = 0; i < kOperandNames.size(); ++i) {
    const bool is_output = i == 2;
    const Bytes sram{traffic.sram[i] * groups * m.arrays};
    const Bytes dram{traffic.dram[i] * groups * m.arrays};
    out.traffic.push_back({kOperandNames[i], "sram", is_output ? Bytes{} : sram,
                           is_output ? sram : Bytes{}});
    out.traffic.push_back({kOperandNames[i], "dram", is_output ? Bytes{} : dram,
                           is_output ? dram : Bytes{}});
    if (is_output) {
      out.cost.sram_writes += sram;
      out.cost.dram_writes += dram;
    } else {
      out.cost.sram_reads += sram;
      out.cost.dram_reads += dram;
    }
  }

  if (!traffic.note.empty()) out.notes.push_back(traffic.note);

  const double pes = static_cast<double>(hw.processing_elements());
  out.mapping_efficiency = static_cast<double>(m.sr * m.sc) /
                           static_cast<double>(m.row_folds * rows * m.col_folds * cols);
  out.compute_utilization =
      static_cast<double>(op.macs) / (pes * rate * static_cast<double>(compute));
  const double dram_bytes =
      static_cast<double>(out.cost.dram_reads.value + out.cost.dram_writes.value);
  out.arithmetic_intensity = dram_bytes > 0 ? static_cast<double>(op.macs) / dram_bytes : 0.0;
  // Memory-bound when moving the DRAM bytes at full bandwidth takes longer than computing.
  out.bound = bw && dram_bytes / (*bw * static_cast<double>(m.arrays)) >
                        static_cast<double>(compute) ? results::Bound::Memory
                                                                     : results::Bound::Compute;
  CODA_CHECK(out.cost.cycles >= out.cost.compute_cycles);
  return out;
}

}  // namespace coda::sim::analytical
