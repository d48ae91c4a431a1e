#include "sim/analytical/systolic_model.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <optional>
#include <vector>

#include "core/check.h"
#include "sim/analytical/scalesim_memory.h"
#include "sim/analytical/systolic_traffic.h"

namespace coda::sim::analytical {
namespace {

using mapper::SystolicMapping;

constexpr std::array<const char*, 3> kOperandNames{"ifmap", "filter", "ofmap"};

// By input operand (ifmap, filter): how many arrays one DRAM fetch of it feeds. The operand
// that does not use the dim cut into the arrays' slices (mapping.split) is the same for every
// array; arrays reading it from one buffer share the fetch: a core's arrays when its level has
// scope core, every array when it is the chip's. 1 otherwise.
std::array<std::uint64_t, 2> input_sharers(const SystolicMapping& m, const arch::HardwareModel& hw) {
  std::array<std::uint64_t, 2> sharers{1, 1};
  if (!m.split || m.arrays <= 1 || hw.matrix_unit() == nullptr) return sharers;
  // The ifmap's dims are M and K, the filter's K and N.
  const std::size_t shared = *m.split == mapper::GemmDim::N ? 0 : 1;
  const arch::MemoryLevelSpec* level =
      hw.operand_level(shared == 0 ? arch::Operand::Ifmap : arch::Operand::Filter);
  if (level == nullptr) return sharers;
  const std::uint64_t per_core = hw.matrix_unit()->count;
  sharers[shared] = level->scope == arch::Scope::Chip ? m.arrays : std::min(m.arrays, per_core);
  return sharers;
}

}  // namespace

results::OpResult evaluate_systolic_as_mapped(const mapper::ScheduledOp& op,
                                              const arch::HardwareModel& hw) {
  const SystolicMapping& m = op.mapping;
  const std::uint64_t rows = hw.rows(), cols = hw.cols();
  const std::uint64_t groups = m.gemm.batch;
  const std::uint64_t passes = m.passes();  // packs of groups, one after another
  const double rate = pe_rate(hw, op.precision);

  // The full packs, and the last with the groups left over (its own shape when it packs fewer).
  const SystolicMapping last_m =
      m.last_pack() == m.packed ? m : mapper::with_packing(m, hw, m.last_pack());

  // What each fold moves (systolic_traffic.h): the same for every full pack. Its folds are the
  // row folds x column folds, times the stripes of T when the outputs accumulate in stripes.
  const std::array<bool, 3> on_chip{op.on_chip.input, op.on_chip.weight, op.on_chip.output};
  const SystolicTraffic traffic = systolic_traffic(m, hw, on_chip);
  const SystolicTraffic last_traffic =
      last_m.packed == m.packed ? traffic : systolic_traffic(last_m, hw, on_chip);
  const std::uint64_t full_folds = traffic.folds.size();
  const std::uint64_t last_folds = last_traffic.folds.size();
  // Stall-free cycles of each fold of a pack: a fold streams its stripe's steps of T.
  const auto pack_fold_cycles = [&](const SystolicMapping& p, const SystolicTraffic& t) {
    std::vector<std::uint64_t> cycles(t.folds.size());
    for (std::uint64_t i = 0; i < cycles.size(); ++i)
      cycles[i] = fold_cycles(p, hw, rate, fold_steps(t, p, i));
    return cycles;
  };
  const std::vector<std::uint64_t> full_fold_cycles = pack_fold_cycles(m, traffic);
  const std::vector<std::uint64_t> last_fold_cycles =
      last_m.packed == m.packed ? full_fold_cycles : pack_fold_cycles(last_m, last_traffic);
  const auto sum = [](const std::vector<std::uint64_t>& v) {
    std::uint64_t total = 0;
    for (const std::uint64_t x : v) total += x;
    return total;
  };
  // An array that loads its stationary tiles while the previous fold streams exposes only the
  // first load (mapper::first_load_cycles), once for the op: the packs follow one another.
  const std::uint64_t first_load = mapper::first_load_cycles(m, hw);

  results::OpResult out;
  out.name = op.name;
  out.unit = results::OpUnit::Systolic;
  out.mapping = {{"Sr", m.sr},          {"Sc", m.sc},          {"T", m.t},
                 {"row_folds", m.row_folds}, {"col_folds", m.col_folds}, {"groups", groups},
                 {"packed", m.packed}};
  if (m.arrays > 1) out.mapping.emplace_back("arrays", m.arrays);
  // Every op on an arch that stripes says its stripe (T when not cut) and stripes per column
  // fold, so a layer table's columns are the same for all its ops.
  if (hw.accumulation() == arch::Accumulation::Stripes) {
    out.mapping.emplace_back("stripe", traffic.stripe);
    out.mapping.emplace_back("stripes", traffic.stripes);
  }
  out.cost.macs = op.macs;
  const std::uint64_t folds = (passes - 1) * full_folds + last_folds;
  out.cost.compute_cycles =
      Cycles{(passes - 1) * sum(full_fold_cycles) + sum(last_fold_cycles) + first_load};

  const std::uint64_t in_full_packs = (passes - 1) * full_folds;
  const auto fold_io = [&](std::uint64_t index) {  // index over all packs' folds
    return index < in_full_packs ? traffic.folds[index % full_folds]
                                 : last_traffic.folds[index - in_full_packs];
  };
  const auto compute_of = [&](std::uint64_t index) {
    const std::uint64_t cycles = index < in_full_packs
                                     ? full_fold_cycles[index % full_folds]
                                     : last_fold_cycles[index - in_full_packs];
    return static_cast<double>(cycles + (index == 0 ? first_load : 0));
  };

  // Arrays that share a buffer (a core's arrays, its level of scope core; all of them, a chip
  // level's) fetch the operand every slice reads whole, the one not using the split dim, once
  // from DRAM for all of them: each array's fold carries 1 / sharers of its fetch.
  const std::array<std::uint64_t, 2> sharers = input_sharers(m, hw);
  const auto fold_in = [&](const FoldBytes& f) {
    return static_cast<double>(f.ifmap) / static_cast<double>(sharers[0]) +
           static_cast<double>(f.filter) / static_cast<double>(sharers[1]) +
           static_cast<double>(f.accumulated);
  };

  // Time the folds on one DRAM channel of `bw` bytes per cycle (see the header). Unlimited
  // bandwidth still walks the folds to count the traffic.
  // Each of the arrays running a slice in parallel has an equal share of the chip's DRAM.
  std::optional<double> bw = hw.achievable_dram_bytes_per_cycle();
  if (bw) *bw /= static_cast<double>(m.arrays);
  const double b = bw.value_or(1.0);
  FoldBytes current = fold_io(0);
  double time = hw.double_buffered() ? fold_in(current) / b : 0.0;
  double previous_out = 0.0;
  for (std::uint64_t i = 0; i < folds; ++i) {
    const FoldBytes next = i + 1 < folds ? fold_io(i + 1) : FoldBytes{};
    const double in = fold_in(current);
    const auto out_bytes = static_cast<double>(current.ofmap);
    if (hw.double_buffered())
      time += std::max(compute_of(i), (fold_in(next) + previous_out) / b);
    else
      time += (in + out_bytes) / b + compute_of(i);
    previous_out = out_bytes;
    current = next;
  }
  if (hw.double_buffered()) time += previous_out / b;

  const std::uint64_t compute = out.cost.compute_cycles.value;
  std::uint64_t total =
      bw ? std::max<std::uint64_t>(compute, static_cast<std::uint64_t>(std::ceil(time - 1e-9)))
         : compute;
  if (hw.spec().dram.model == arch::DramModel::ScaleSim) {  // SCALE-Sim's USER mode instead
    const ScaleSimCycles scalesim = simulate_scalesim_op(m, hw);
    CODA_CHECK(scalesim.demand_rows == compute);
    total = compute + scalesim.stall_cycles;
  }
  out.cost.cycles = Cycles{total};
  out.cost.stall_cycles = Cycles{total - compute};

  // Every full pack moves the same bytes, and every array its own slice's.
  for (std::size_t i = 0; i < kOperandNames.size(); ++i) {
    const bool is_output = i == 2;
    const Bytes sram{((passes - 1) * traffic.sram[i] + last_traffic.sram[i]) * m.arrays};
    const Bytes dram{((passes - 1) * traffic.dram[i] + last_traffic.dram[i]) * m.arrays /
                     (is_output ? 1 : sharers[i])};
    // The output's reads: its earlier values, where the op adds into it (C += A B).
    const Bytes sram_acc{((passes - 1) * traffic.sram_accumulated + last_traffic.sram_accumulated) *
                         m.arrays};
    const Bytes dram_acc{((passes - 1) * traffic.dram_accumulated + last_traffic.dram_accumulated) *
                         m.arrays};
    out.traffic.push_back({kOperandNames[i], "sram", is_output ? sram_acc : sram,
                           is_output ? sram : Bytes{}});
    out.traffic.push_back({kOperandNames[i], "dram", is_output ? dram_acc : dram,
                           is_output ? dram : Bytes{}});
    if (is_output) {
      out.cost.sram_writes += sram;
      out.cost.dram_writes += dram;
      out.cost.sram_reads += sram_acc;
      out.cost.dram_reads += dram_acc;
    } else {
      out.cost.sram_reads += sram;
      out.cost.dram_reads += dram;
    }
  }

  if (!traffic.note.empty()) out.notes.push_back(traffic.note);
  else if (!last_traffic.note.empty()) out.notes.push_back(last_traffic.note);

  const double pes = static_cast<double>(hw.processing_elements());
  // PE-steps holding work, over the folds: a pack's block-diagonal GEMM does work in 1 / packed
  // of its Sr x Sc x T (the rest multiplies the filter's zeros).
  const auto work = [](const SystolicMapping& p) {
    return static_cast<double>(p.sr * p.sc) / static_cast<double>(p.packed);
  };
  // Over the spatial folds: the stripes of T repeat each one with the same PEs.
  const std::uint64_t spatial_folds =
      (passes - 1) * m.row_folds * m.col_folds + last_m.row_folds * last_m.col_folds;
  out.mapping_efficiency = (static_cast<double>(passes - 1) * work(m) + work(last_m)) /
                           static_cast<double>(spatial_folds * rows * cols);
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

results::OpResult evaluate_systolic(const mapper::ScheduledOp& op, const arch::HardwareModel& hw) {
  const std::vector<std::uint64_t> packings = mapper::packing_candidates(op.mapping, hw);
  if (packings.size() == 1 && packings.front() == op.mapping.packed)
    return evaluate_systolic_as_mapped(op, hw);
  std::optional<results::OpResult> best;
  mapper::ScheduledOp candidate = op;
  for (const std::uint64_t packed : packings) {
    candidate.mapping = mapper::with_packing(op.mapping, hw, packed);
    results::OpResult r = evaluate_systolic_as_mapped(candidate, hw);
    // Strictly faster only: on a tie the fewer groups per pack (less zero work) stay.
    if (!best || r.cost.cycles < best->cost.cycles) best = std::move(r);
  }
  return std::move(*best);
}

results::OpResult SystolicMemo::evaluate(const mapper::ScheduledOp& op) {
  for (const Walked& w : walked_) {
    if (w.op->mapping == op.mapping && w.op->precision == op.precision && w.op->macs == op.macs &&
        w.op->on_chip == op.on_chip) {
      results::OpResult copy = w.result;
      copy.name = op.name;
      return copy;
    }
  }
  walked_.push_back({&op, evaluate_systolic(op, hw_)});
  return walked_.back().result;
}

}  // namespace coda::sim::analytical
