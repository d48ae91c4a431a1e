// Invariants that hold for every bundled workload on every bundled architecture preset, whatever
// the model's details: checked through sim::run_files, the path `coda run` takes, once with the
// fixed mapper (the closed forms) and once with `--mapper search` (every contraction priced from
// a searched loop nest, docs/mapping.md "In coda run").
//
// Every op:
//   cycles >= compute_cycles >= ceil(MACs / peak MACs per cycle at the op's precision), and for
//   the closed forms >= ceil(MACs / PEs) (one MAC per PE per cycle); stall = cycles - compute
//   compute utilization and mapping (or wave) efficiency in (0, 1]; energy above zero
//   run totals equal the sum over ops (cycles, compute and stall cycles, MACs, traffic, energy)
// Fixed mapper:
//   DRAM traffic >= the compulsory traffic: each operand moves at least once, so ifmap and
//   filter reads and ofmap writes >= the bytes of the elements the op touches in each tensor
//   (a convolution's feature map, not its im2col-unrolled matrix), at the element size the
//   model prices each operand at; an operand held on chip (a cached weight) moves none
//   SRAM (L2) traffic >= DRAM traffic (everything from DRAM passes through it)
//   per-op cost totals equal the sum of the operands' traffic
//   the DRAM roofline: cycles >= DRAM bytes / DRAM bytes per cycle (check_fixed_roofline)
// Searched mappings (derivations at each check):
//   traffic per level of the arch's hierarchy and per tensor role; cost totals = their sums
//   the roofline of every level with a stated bandwidth, DRAM included
//   compulsory traffic: DRAM reads of inputs and weights, writes of outputs >= the bytes of the
//   elements the op touches
//   energy = MACs x MAC energy + every level's bytes x its energy per byte + static power x time
// An arch that lacks the workloads' int8 runs them at its first matrix precision.

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <map>
#include <optional>
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

// Peak MACs per cycle of the chip's matrix units at `precision` (2 operations per MAC).
double peak_macs_per_cycle(const arch::HardwareModel& hw, DataType precision) {
  return hw.peak_ops_per_second(precision) / 2.0 / hw.clock().value;
}

// Tensor-core ops: A and B are read from DRAM and C written at least once. A is the input tensor
// as stored (a conv's feature map, not its unrolled m x k matrix: gpu_model.h, "Memory"), so the
// reads are at least its bytes, or the unrolled matrix's when smaller (a strided 1x1 conv skips
// pixels of its map), plus B's k x n per batch entry.
void check_tensor_core_op(const results::OpResult& op, const workload::Op& graph_op,
                          DataType precision, std::uint64_t bytes) {
  const workload::GemmView g = workload::gemm_view(graph_op);
  const std::uint64_t a_bytes =  // the input tensor re-typed to the run's precision
      workload::tensor_bytes(graph_op, workload::TensorRole::Input).value *
      bit_width(precision) / bit_width(mapper::op_precision(graph_op));
  EXPECT_GE(op.cost.dram_reads.value,
            std::min(a_bytes, g.m * g.k * g.batch * bytes) + g.k * g.n * g.batch * bytes);
  EXPECT_GE(op.cost.dram_writes.value, g.m * g.n * g.batch);
  EXPECT_GE(op.cost.sram_reads, op.cost.dram_reads);  // everything from DRAM passes the L2
}

// The DRAM roofline of the closed forms: cycles >= (DRAM reads + writes) / DRAM bytes per cycle.
//   systolic (sim/analytical/systolic_model.cpp): the chip's DRAM bandwidth B is split evenly
//     over the `arrays` that run equal slices, b = B / arrays each. Each slice's time walks its
//     folds: double-buffered, time = in_0 / b + sum_i max(compute, (in_{i+1} + out_{i-1}) / b)
//     + out_last / b >= (sum in + sum out) / b; otherwise time = sum (in_i + out_i) / b + compute,
//     also >= (sum in + sum out) / b. A slice's in and out bytes are exactly its DRAM traffic, and
//     the op's traffic is arrays x a slice's, so time >= op DRAM bytes / B. cycles =
//     max(compute, ceil(time - 1e-9)) >= time - 1e-9.
//   tensor cores (sim/analytical/gpu_model.cpp): seconds = launch + sum over waves of
//     max(compute, L2 bytes / L2 rate, DRAM bytes / DRAM rate) >= sum of the waves' DRAM bytes /
//     DRAM rate = dram_bytes / DRAM rate; cycles = ceil(seconds x clock - 1e-9). The result
//     splits llround(dram_bytes) into reads and writes, so reads + writes <= dram_bytes + 0.5.
// Hence cycles >= (reads + writes - 0.5) / bytes per cycle - 1e-9 for both (the 0.5 is zero for
// the systolic form, whose bytes are whole words), up to floating-point rounding (1e-12 relative).
void check_fixed_roofline(const results::OpResult& op, const arch::HardwareModel& hw) {
  const auto dram_bpc = hw.dram_bytes_per_cycle();
  if (!dram_bpc) return;  // unlimited DRAM bandwidth: no bound
  const double bytes = static_cast<double>(op.cost.dram_reads.value + op.cost.dram_writes.value);
  const double bound = (bytes - 0.5) / *dram_bpc;
  EXPECT_GE(static_cast<double>(op.cost.cycles.value), bound * (1 - 1e-12) - 1e-9)
      << "DRAM bytes " << bytes << " at " << *dram_bpc << " B/cycle";
}

// ---- searched mappings ----

// Elements of one rank of a tensor that the op touches: the distinct values of the rank's
// index expression over the iteration space that lie inside the tensor (an index in the padding
// reads nothing). Enumerated: a conv's input row p*stride + r - pad over P x R points.
std::uint64_t touched_on_rank(const workload::IndexExpr& index, std::uint64_t shape,
                              const workload::Einsum& space) {
  std::vector<char> hit(shape, 0);
  std::vector<std::uint64_t> at(index.terms.size(), 0);
  for (;;) {
    std::int64_t value = index.offset;
    for (std::size_t t = 0; t < at.size(); ++t)
      value += index.terms[t].coefficient * static_cast<std::int64_t>(at[t]);
    if (value >= 0 && static_cast<std::uint64_t>(value) < shape)
      hit[static_cast<std::size_t>(value)] = 1;
    std::size_t t = 0;
    for (; t < at.size(); ++t) {
      if (++at[t] < space.dims[index.terms[t].dim].extent) break;
      at[t] = 0;
    }
    if (t == at.size()) break;
  }
  return static_cast<std::uint64_t>(std::count(hit.begin(), hit.end(), 1));
}

// Bytes of the elements of every tensor of `role` the op touches, each element once, at the
// element type the search priced: each tensor's own, or every tensor at the run's precision when
// that differs from the op's (mapper/schedule.cpp re-types the op then). When the ranks of a
// tensor are indexed by disjoint sets of dims (as in every bundled workload: checked), the
// touched elements are the cartesian product of each rank's touched values.
// `word`: schema 1 prices every element at its word size instead.
double touched_bytes(const workload::Op& op, workload::TensorRole role,
                     std::optional<DataType> precision,
                     std::optional<std::uint64_t> word = std::nullopt) {
  const bool retyped = precision.has_value() && *precision != mapper::op_precision(op);
  const DataType retype = precision.value_or(DataType::Int8);
  double bytes = 0;
  for (const workload::TensorAccess& access : op.space.accesses) {
    if (access.role != role) continue;
    EXPECT_EQ(access.indices.size(), access.shape.size()) << access.tensor;
    std::vector<bool> seen(op.space.dims.size(), false);
    double elements = 1;
    for (std::size_t r = 0; r < access.indices.size() && r < access.shape.size(); ++r) {
      for (const workload::IndexTerm& term : access.indices[r].terms) {
        EXPECT_FALSE(seen[term.dim]) << access.tensor << ": a dim indexes two ranks";
        seen[term.dim] = true;
      }
      elements *=
          static_cast<double>(touched_on_rank(access.indices[r], access.shape[r], op.space));
    }
    bytes += elements * (word ? static_cast<double>(*word)
                              : bit_width(retyped ? retype : access.dtype) / 8.0);
  }
  return bytes;
}

// Systolic ops: per-operand traffic, compulsory traffic and SRAM >= DRAM. Each operand's DRAM
// traffic is at least the bytes of the elements the op touches, each once, at the element size
// the traffic model prices it at (sim/analytical/systolic_traffic.h): schema 1's word, else the
// tensor's own type (re-typed by the run's precision). A fold fetches at least the elements its
// tile touches (both its words and its bounding box hold them), the tiles cover every touched
// element, and the finished outputs are written at least once.
// An operand the schedule holds on chip (`on_chip`: a weight an arch level caches across runs,
// mapper/residency.h) is in the buffer already: the closed form moves none of it from DRAM.
void check_systolic_op(const results::OpResult& op, const workload::Op& graph_op,
                       std::optional<DataType> precision, const arch::HardwareModel& hw,
                       const mapper::OnChipOperands& on_chip) {
  const auto compulsory = [&](workload::TensorRole role, bool held) {
    return held ? 0.0 : touched_bytes(graph_op, role, precision, hw.word_bytes());
  };
  const auto* ifmap_dram = find_traffic(op, "ifmap", "dram");
  const auto* filter_dram = find_traffic(op, "filter", "dram");
  const auto* ofmap_dram = find_traffic(op, "ofmap", "dram");
  ASSERT_TRUE(ifmap_dram && filter_dram && ofmap_dram);
  EXPECT_GE(static_cast<double>(ifmap_dram->reads.value),
            std::floor(compulsory(workload::TensorRole::Input, on_chip.input)));
  EXPECT_GE(static_cast<double>(filter_dram->reads.value),
            std::floor(compulsory(workload::TensorRole::Weight, on_chip.weight)));
  EXPECT_GE(static_cast<double>(ofmap_dram->writes.value),
            std::floor(compulsory(workload::TensorRole::Output, on_chip.output)));
  if (on_chip.input) {
    EXPECT_EQ(ifmap_dram->reads, Bytes{});
  }
  if (on_chip.weight) {
    EXPECT_EQ(filter_dram->reads, Bytes{});
  }
  for (const char* tensor : {"ifmap", "filter", "ofmap"}) {
    const auto* sram = find_traffic(op, tensor, "sram");
    const auto* dram = find_traffic(op, tensor, "dram");
    ASSERT_TRUE(sram && dram) << tensor;
    EXPECT_GE(sram->reads, dram->reads) << tensor;
    EXPECT_GE(sram->writes, dram->writes) << tensor;
  }
}

double joules_per_byte(const arch::HardwareModel& hw, std::string_view level) {
  for (const auto& [name, joules] : hw.energy().per_byte)
    if (name == level) return joules.value;
  return 0.0;
}

// A searched op's traffic at one level: the sums over its tensors, and how many entries they
// add up (each entry is the loop-nest model's byte count rounded to a whole byte, so the sums
// differ from the model's by at most 0.5 per entry and direction).
struct LevelTraffic {
  double reads = 0;
  double writes = 0;
  double entries = 0;
};

void check_searched_op(const results::OpResult& op, const workload::Op& graph_op,
                       std::optional<DataType> run_precision, const arch::HardwareModel& hw,
                       const mapper::OnChipOperands& on_chip) {
  const DataType precision = run_precision.value_or(mapper::op_precision(graph_op));
  const results::Cost& c = op.cost;
  const double clock = hw.clock().value;
  const double cycles = static_cast<double>(c.cycles.value);

  // Traffic: per level of the hierarchy (the arch's level names, DRAM last as "dram"; the PE
  // registers are left out) and per tensor role; sram_* sums the on-chip levels, dram_* DRAM's.
  std::map<std::string, LevelTraffic> levels;
  Bytes sram_reads, sram_writes, dram_reads, dram_writes;
  for (const auto& t : op.traffic) {
    EXPECT_TRUE(t.tensor == "inputs" || t.tensor == "weights" || t.tensor == "outputs") << t.tensor;
    const bool known = std::any_of(hw.levels().begin(), hw.levels().end(),
                                   [&](const arch::LevelSummary& l) { return l.name == t.level; });
    EXPECT_TRUE(known) << t.level;
    LevelTraffic& level = levels[t.level];
    level.reads += static_cast<double>(t.reads.value);
    level.writes += static_cast<double>(t.writes.value);
    level.entries += 1;
    (t.level == "dram" ? dram_reads : sram_reads) += t.reads;
    (t.level == "dram" ? dram_writes : sram_writes) += t.writes;
  }
  EXPECT_EQ(c.sram_reads, sram_reads);
  EXPECT_EQ(c.sram_writes, sram_writes);
  EXPECT_EQ(c.dram_reads, dram_reads);
  EXPECT_EQ(c.dram_writes, dram_writes);

  // The roofline of every level with a stated bandwidth. The loop-nest model (docs/mapping.md,
  // "Capacity, time, energy") gives level i the time reads_i / (r_i x used_i) and writes_i /
  // (w_i x used_i), their sum for DRAM (one shared port), with r_i, w_i the bandwidth of one
  // instance and used_i the instances in use; the nest's cycles are the maximum of compute and
  // every level's time, and the op's cycles are ceil(nest - 1e-9) (+ the launch on tensor cores)
  // >= nest - 1e-9. used_i is the product of the spatial factors of the levels above i, each at
  // most that level's fan-out, floor(instances below / its instances); when instances do not grow
  // outward (checked in check_run) the product telescopes to at most instances_i / DRAM's 1. So
  // used_i <= instances_i, and the time is at least reads_i / (r_i x instances_i), the chip-wide
  // bandwidth arch::LevelSummary states (per second; / clock per cycle). The reported bytes are
  // rounded: up to 0.5 per entry above the model's.
  for (const arch::LevelSummary& summary : hw.levels()) {
    const auto it = levels.find(summary.name);
    if (it == levels.end()) continue;
    const LevelTraffic& t = it->second;
    SCOPED_TRACE("level " + summary.name);
    const auto at_least = [&](double bytes, double slack, double bytes_per_cycle) {
      EXPECT_GE(cycles, (bytes - slack) / bytes_per_cycle * (1 - 1e-12) - 1e-9)
          << bytes << " B at " << bytes_per_cycle << " B/cycle";
    };
    if (summary.name == "dram") {
      if (const auto dram_bpc = hw.dram_bytes_per_cycle())
        at_least(t.reads + t.writes, t.entries, *dram_bpc);
      continue;
    }
    if (summary.read_bytes_per_second)
      at_least(t.reads, 0.5 * t.entries, *summary.read_bytes_per_second / clock);
    if (summary.write_bytes_per_second)
      at_least(t.writes, 0.5 * t.entries, *summary.write_bytes_per_second / clock);
  }

  // Compulsory traffic: DRAM holds every tensor, and the loop-nest model (docs/mapping.md,
  // "Reuse counting") moves each tensor between DRAM and the next level below that keeps it (or
  // the PEs) as fills x tile x used instances / share: the loops above that level visit every
  // tile of the iteration space at least once, a tile counts at least the in-tensor elements it
  // touches (its bounding box, at most the points, clipped to the shape), and dividing by the
  // share removes only copies of the same tile sent to children that differ along dims that do
  // not index the tensor (multicast, spatial reduction). So every element the op touches is read
  // (inputs, weights) or written (outputs) at least once. A strided 1x1 conv touches only every
  // stride-th input row and column: hence the touched elements, not the whole tensor. A role
  // the schedule holds on chip (a cached weight) has its bytes taken off (remove_fused_traffic),
  // so it has no lower bound.
  const auto dram_of = [&](std::string_view tensor, bool reads) {
    double bytes = 0;
    for (const auto& t : op.traffic)
      if (t.level == "dram" && t.tensor == tensor)
        bytes += static_cast<double>((reads ? t.reads : t.writes).value) + 0.5;  // rounding
    return bytes;
  };
  using workload::TensorRole;
  const auto touched = [&](TensorRole role, bool held) {
    return held ? 0.0 : touched_bytes(graph_op, role, run_precision);
  };
  const double inputs = touched(TensorRole::Input, on_chip.input);
  const double weights = touched(TensorRole::Weight, on_chip.weight);
  const double outputs = touched(TensorRole::Output, on_chip.output);
  EXPECT_GE(dram_of("inputs", true), inputs * (1 - 1e-12));
  EXPECT_GE(dram_of("weights", true), weights * (1 - 1e-12));
  EXPECT_GE(dram_of("outputs", false), outputs * (1 - 1e-12));

  // Energy (sim/analytical/unit_costs.cpp evaluate_loop_nest, docs/mapping.md): the loop nest's
  // MACs x MAC energy + every level's bytes read and written x its energy per byte (the PE
  // registers' folded into the MAC's), plus static power over the op's cycles. Recomputed from
  // the reported bytes: each entry's reads and writes are within 0.5 byte of the model's.
  const auto mac = hw.energy().mac.find(precision);
  ASSERT_NE(mac, hw.energy().mac.end()) << "no MAC energy at " << to_string(precision);
  double expected = static_cast<double>(c.macs) * mac->second.value +
                    hw.energy().static_power.value * cycles / clock;
  double rounding = 0;
  for (const auto& [name, t] : levels) {
    expected += (t.reads + t.writes) * joules_per_byte(hw, name);
    rounding += t.entries * joules_per_byte(hw, name);
  }
  EXPECT_NEAR(c.energy.value, expected, 1e-9 * expected + rounding);
}

struct Totals {
  results::Cost sum;
  std::size_t searched = 0;  // ops priced from a searched loop nest
};

void check_run(const fs::path& arch_file, const fs::path& workload_file,
               const std::optional<mapper::ScheduleSearch>& search) {
  SCOPED_TRACE(arch_file.string() + " x " + workload_file.string() +
               (search ? " (mapper search)" : " (mapper fixed)"));
  Diagnostics diags;
  const auto arch = arch::load_arch(arch_file, diags);
  const auto graph = workload::load_workload(workload_file, diags);
  ASSERT_TRUE(arch && graph) << diags.format_all();
  const arch::HardwareModel hw(arch->spec);
  const auto precision = run_precision(hw);
  const sim::RunFiles files{.arch = arch_file,
                            .workload = workload_file,
                            .precision = precision,
                            .search = search};
  const auto run = sim::run_files(files, diags);
  ASSERT_TRUE(run.has_value()) << diags.format_all();
  EXPECT_FALSE(diags.has_errors());
  ASSERT_EQ(run->ops.size(), graph->ops.size());  // the bundled layer lists are contractions
  ASSERT_TRUE(run->skipped.empty());
  EXPECT_EQ(run->mapper, search ? "search: heuristic, latency" : "fixed");
  const std::uint64_t pes = run->processing_elements;
  ASSERT_GT(pes, 0u);
  const std::uint64_t bytes = (bit_width(precision.value_or(DataType::Int8)) + 7) / 8;
  if (search) {
    // Precondition of the level rooflines (check_searched_op): no level has more instances than
    // the level below it.
    const auto& levels = hw.levels();
    for (std::size_t i = 0; i + 1 < levels.size(); ++i)
      ASSERT_GE(levels[i].instances, levels[i + 1].instances) << levels[i + 1].name;
  }

  // What the run holds on chip, by op (the same schedule run_files made: cached weights, and
  // the activations kept on chip where the arch's vendor compiler fuses everything).
  const mapper::Schedule schedule = mapper::schedule_graph(
      *graph, hw,
      {.precision = precision,
       .fusion = hw.spec().calibration.fusion.value_or(mapper::FusionMode::None)});
  ASSERT_EQ(schedule.ops.size(), run->ops.size());

  Totals totals;
  for (std::size_t i = 0; i < run->ops.size(); ++i) {
    const results::OpResult& op = run->ops[i];
    const workload::Op& graph_op = graph->ops[i];
    const workload::GemmView g = workload::gemm_view(graph_op);
    const DataType op_precision = precision.value_or(mapper::op_precision(graph_op));
    SCOPED_TRACE(op.name);
    EXPECT_EQ(op.name, graph_op.name);
    const results::Cost& c = op.cost;
    EXPECT_EQ(c.macs, g.batch * g.m * g.n * g.k);
    EXPECT_GE(c.cycles, c.compute_cycles);
    // No unit does more than its peak MACs in a cycle (a systolic PE at its macs_per_pe rate,
    // 2 per cycle for TPU v5e's int8, in the closed form and the loop nest alike; tensor cores
    // at their rate for the op's precision).
    const double peak = peak_macs_per_cycle(hw, op_precision);
    ASSERT_GT(peak, 0.0);
    EXPECT_GE(static_cast<double>(c.compute_cycles.value),
              std::ceil(static_cast<double>(c.macs) / peak * (1 - 1e-12)));
    EXPECT_EQ(c.stall_cycles.value, c.cycles.value - c.compute_cycles.value);
    EXPECT_GT(op.compute_utilization, 0.0);
    EXPECT_LE(op.compute_utilization, 1.0 + 1e-12);
    EXPECT_GT(op.mapping_efficiency, 0.0);
    EXPECT_LE(op.mapping_efficiency, 1.0);
    EXPECT_GT(c.energy.value, 0.0);  // at least the MACs' dynamic energy

    if (!op.loop_nest.empty()) {
      ++totals.searched;
      check_searched_op(op, graph_op, precision, hw, schedule.ops[i].on_chip);
    } else if (op.unit == results::OpUnit::Systolic) {
      check_systolic_op(op, graph_op, precision, hw, schedule.ops[i].on_chip);
      check_fixed_roofline(op, hw);
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
      EXPECT_EQ(op.unit, results::OpUnit::TensorCore);
      check_tensor_core_op(op, graph_op, op_precision, bytes);
      check_fixed_roofline(op, hw);
    }
    totals.sum = totals.sum + c;
  }
  // With search, every contraction on the matrix unit gets a loop nest: the bundled layer lists
  // fit the model's limits (8 levels, 12 dims), and the fallback to the closed form is for ops
  // without a map space.
  EXPECT_EQ(totals.searched, search ? run->ops.size() : 0U);
  const results::Cost& sum = totals.sum;
  EXPECT_EQ(run->total.cycles, sum.cycles);
  EXPECT_EQ(run->total.compute_cycles, sum.compute_cycles);
  EXPECT_EQ(run->total.stall_cycles, sum.stall_cycles);
  EXPECT_EQ(run->total.macs, sum.macs);
  EXPECT_EQ(run->total.sram_reads, sum.sram_reads);
  EXPECT_EQ(run->total.sram_writes, sum.sram_writes);
  EXPECT_EQ(run->total.dram_reads, sum.dram_reads);
  EXPECT_EQ(run->total.dram_writes, sum.dram_writes);
  EXPECT_NEAR(run->total.energy.value, sum.energy.value, 1e-9 * sum.energy.value);
}

std::vector<fs::path> bundled_workloads() {
  // Every file check-config reads as a workload (a .csv, or YAML with `layers:`); files in
  // formats the run path does not read yet are left out here.
  std::vector<fs::path> workloads;
  for (const auto& file : files_under("configs/workloads", {".yaml", ".csv"}))
    if (cli::config_kind(file) == cli::ConfigKind::Workload) workloads.push_back(file);
  return workloads;
}

TEST(Invariants, EveryBundledWorkloadOnEveryPreset) {
  const auto archs = files_under("configs/arch", {".yaml"});
  const auto workloads = bundled_workloads();
  ASSERT_GE(archs.size(), 5U);
  ASSERT_GE(workloads.size(), 9U);
  for (const auto& arch : archs)
    for (const auto& workload : workloads) check_run(arch, workload, std::nullopt);
}

// The same with a loop-nest mapping searched for every contraction: the heuristic search with
// a small budget (300 evaluations per distinct shape) keeps the whole sweep fast; the invariants
// hold for any mapping the search returns, good or not.
TEST(Invariants, EveryBundledWorkloadOnEveryPresetWithSearchedMappings) {
  const auto archs = files_under("configs/arch", {".yaml"});
  const auto workloads = bundled_workloads();
  ASSERT_GE(archs.size(), 5U);
  ASSERT_GE(workloads.size(), 9U);
  mapper::ScheduleSearch search;
  search.goal.objective = mapper::Objective::Latency;
  search.settings.strategy = mapper::Strategy::Heuristic;
  search.settings.budget.max_evaluations = 300;
  search.settings.seed = 1;
  for (const auto& arch : archs)
    for (const auto& workload : workloads) check_run(arch, workload, search);
}

}  // namespace
}  // namespace coda
