#include "sim/timing/chip_plan.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <variant>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "sim/analytical/unit_costs.h"

namespace coda::sim::timing {
namespace {

// Typical row-buffer figures per DRAM technology, for configs that state none: banks per
// channel, row (page) bytes per channel, tRCD, tRP and CAS latency in ns, as the JEDEC standards
// give them for common speed grades:
//   DDR3   JESD79-3F: 8 banks; 8 KiB page per x64 rank (1 KiB per x8 device); DDR3-1600K 13.75 ns
//   DDR4   JESD79-4C: 16 banks (4 groups x 4); 8 KiB page per x64 rank; DDR4-3200AA 13.75 ns
//   DDR5   JESD79-5B: 32 banks (8 groups x 4); 2 KiB page per x8 device, 8 KiB per 32-bit
//          subchannel of x8 devices; DDR5-4800B 16 ns
//   LPDDR4/4X  JESD209-4: 8 banks; 2 KiB page per x16 channel; tRCD 18 ns, tRPpb 18 ns, RL
//          about 17.5 ns at 4266 MT/s (RL 36 at 2133 MHz)
//   LPDDR5/5X  JESD209-5: 16 banks; 2 KiB page; tRCD 18 ns, tRPpb 18 ns, RL about 17 ns
//   GDDR6  JESD250: 16 banks; 2 KiB page per 16-bit channel; tRCD 18 ns, tRP 18 ns, CL ~ 17 ns
//   HBM2/2E/3/3E  JESD235 / JESD238: 16 banks per pseudo channel (HBM3: 4 groups x 4); 1 KiB
//          page per pseudo channel; tRCD 14 ns, tRP 14 ns, CL about 14 ns
// and the bandwidth of one such channel (its width x data rate at that grade): DDR3 64 bit x 1.6
// GT/s = 12.8 GB/s, DDR4 64 x 3.2 = 25.6, DDR5 32-bit subchannel x 4.8 = 19.2, LPDDR4X 16 x
// 4.266 = 8.5, LPDDR5 16 x 6.4 = 12.8, GDDR6 16 x 16 = 32, HBM2 pseudo channel 64 x 2.0 = 16,
// HBM2E 64 x 3.2 = 25.6, HBM3 32 x 6.4 = 25.6, HBM3E 32 x 9.6 = 38.4. A config's channel that
// carries more than that stands for several physical channels: it gets their banks together.
struct RowTiming {
  std::uint32_t banks;
  std::uint64_t row_bytes;
  double trcd_ns, trp_ns, cas_ns;
  const char* source;
  double channel_gbps = 25.6;
};

RowTiming typical(arch::DramTechnology technology) {
  using T = arch::DramTechnology;
  switch (technology) {
    case T::Ddr3: return {8, 8192, 13.75, 13.75, 13.75, "JESD79-3F DDR3-1600K", 12.8};
    case T::Ddr4: return {16, 8192, 13.75, 13.75, 13.75, "JESD79-4C DDR4-3200AA", 25.6};
    case T::Ddr5: return {32, 8192, 16, 16, 16, "JESD79-5B DDR5-4800B", 19.2};
    case T::Lpddr4:
    case T::Lpddr4x: return {8, 2048, 18, 18, 17.5, "JESD209-4 LPDDR4X-4266", 8.5};
    case T::Lpddr5:
    case T::Lpddr5x: return {16, 2048, 18, 18, 17, "JESD209-5 LPDDR5-6400", 12.8};
    case T::Gddr6: return {16, 2048, 18, 18, 17, "JESD250 GDDR6", 32};
    case T::Hbm2: return {16, 1024, 14, 14, 14, "JESD235 HBM2", 16};
    case T::Hbm2e: return {16, 1024, 14, 14, 14, "JESD235 HBM2E", 25.6};
    case T::Hbm3: return {16, 1024, 14, 14, 14, "JESD238 HBM3", 25.6};
    case T::Hbm3e: return {16, 1024, 14, 14, 14, "JESD238 HBM3E", 38.4};
    case T::Unspecified: break;
  }
  return {16, 8192, 13.75, 13.75, 13.75, "JESD79-4C DDR4-3200AA (no technology stated)", 25.6};
}

double cycles_of(const Latency& latency, double clock_hz) {
  if (const auto* cycles = std::get_if<Cycles>(&latency)) return static_cast<double>(cycles->value);
  return std::get<Seconds>(latency).value * clock_hz;
}

// The outermost on-chip level (the last before DRAM).
const arch::LevelSummary* outermost_on_chip(const arch::HardwareModel& hw) {
  const auto& levels = hw.levels();
  return levels.size() >= 2 ? &levels[levels.size() - 2] : nullptr;
}

}  // namespace

ChipParams chip_params(const arch::HardwareModel& hw) {
  const arch::ArchSpec& spec = hw.spec();
  ChipParams chip;
  chip.clock_hz = hw.clock().value;
  chip.double_buffered = hw.double_buffered();
  const bool gpu = hw.matrix_unit() != nullptr && hw.matrix_unit()->kind == arch::UnitKind::TensorCore;
  chip.cores = gpu ? 1 : std::max<std::uint32_t>(spec.cores, 1);
  chip.notes.push_back(gpu ? fmt::format("cores: the {} SMs run as one grid", spec.cores)
                           : fmt::format("cores: {}, each running a share of every op's steps",
                                         chip.cores));

  // DRAM.
  DramParams& dram = chip.dram;
  dram.bytes_per_cycle = hw.achievable_dram_bytes_per_cycle().value_or(0.0);
  dram.channels = std::max<std::uint32_t>(spec.dram.channels, 1);
  const RowTiming row = typical(spec.dram.technology);
  const double ns = chip.clock_hz * 1e-9;  // cycles per ns
  const arch::DramTiming* stated = spec.dram.timing ? &*spec.dram.timing : nullptr;
  // Physical channels one configured channel stands for (see RowTiming).
  const double channel_gbps = dram.bytes_per_cycle / dram.channels * chip.clock_hz / 1e9;
  const auto physical = static_cast<std::uint32_t>(
      std::clamp(std::round(channel_gbps / row.channel_gbps), 1.0, 4096.0));
  dram.banks_per_channel = stated != nullptr && stated->banks_per_channel > 0
                               ? stated->banks_per_channel
                               : row.banks * physical;
  dram.row_bytes = stated != nullptr && stated->row_buffer.value > 0 ? stated->row_buffer.value
                                                                      : row.row_bytes;
  const double trcd = stated != nullptr && stated->t_rcd ? stated->t_rcd->value * 1e9 : row.trcd_ns;
  const double trp = stated != nullptr && stated->t_rp ? stated->t_rp->value * 1e9 : row.trp_ns;
  dram.row_miss_cycles = (trcd + trp) * ns;
  const bool stated_latency = spec.dram.latency || (stated != nullptr && stated->t_cl);
  dram.latency_cycles = spec.dram.latency ? cycles_of(*spec.dram.latency, chip.clock_hz)
                        : stated != nullptr && stated->t_cl ? stated->t_cl->value * chip.clock_hz
                                                            : row.cas_ns * ns;
  dram.interleave_bytes = 256;
  if (dram.bytes_per_cycle <= 0 && stated == nullptr && !stated_latency) {
    // The config says memory is no limit: an ideal memory, no rows and no latency either.
    dram.row_bytes = 0;
    dram.row_miss_cycles = 0;
    dram.latency_cycles = 0;
    chip.notes.emplace_back("dram: ideal (unlimited bandwidth, no latency or row timing stated)");
  } else {
    chip.notes.push_back(fmt::format(
      "dram: {} channels, {:.4g} B/cycle, 256 B interleave; {} banks{} x {} B rows, tRP + tRCD "
      "{:.4g} cycles ({}); latency {:.4g} cycles ({})",
      dram.channels, dram.bytes_per_cycle, dram.banks_per_channel,
      stated != nullptr && stated->banks_per_channel > 0
          ? std::string()
          : fmt::format(" ({} physical channels of {:.4g} GB/s per channel)", physical,
                        row.channel_gbps),
      dram.row_bytes,
      dram.row_miss_cycles, stated != nullptr ? "stated" : fmt::format("typical: {}", row.source),
      dram.latency_cycles, stated_latency ? "stated" : "typical CAS latency"));
  }

  // The path to DRAM.
  if (gpu) {
    if (const arch::MemoryLevelSpec* l2 = hw.chip_cache(); l2 != nullptr && l2->read_bandwidth) {
      const double bytes_per_cycle = coda::per_cycle(*l2->read_bandwidth, hw.clock()).value *
                                     static_cast<double>(l2->instances);
      const double latency = l2->latency ? cycles_of(*l2->latency, chip.clock_hz) : 0.0;
      chip.link = LinkParams{bytes_per_cycle, latency};
      chip.link_shared = true;
      chip.notes.push_back(fmt::format("SM-to-L2 path: '{}' read bandwidth {:.4g} B/cycle, "
                                       "latency {:.4g} cycles, shared by the grid",
                                       l2->name, bytes_per_cycle, latency));
    }
  } else if (chip.cores > 1 && spec.noc) {
    const double bytes_per_cycle = coda::per_cycle(spec.noc->bandwidth, hw.clock()).value;
    const double hop = spec.noc->hop_latency ? cycles_of(*spec.noc->hop_latency, chip.clock_hz)
                                             : 0.0;
    chip.link = LinkParams{bytes_per_cycle, hop * spec.noc->average_hops};
    chip.notes.push_back(fmt::format("noc: one link per core, {:.4g} B/cycle, {:.4g} hops x "
                                     "{:.4g} cycles",
                                     bytes_per_cycle, spec.noc->average_hops, hop));
  }
  return chip;
}

std::uint64_t streaming_steps(double bytes, const arch::HardwareModel& hw) {
  double tile = kMaxStreamTileBytes;
  if (const arch::LevelSummary* level = outermost_on_chip(hw); level != nullptr &&
                                                               level->capacity.value > 0)
    tile = std::min(tile, static_cast<double>(level->capacity.value) / 2.0);
  tile = std::max(tile, 1.0);
  const double steps = std::ceil(bytes / tile);
  return static_cast<std::uint64_t>(
      std::clamp(steps, 1.0, static_cast<double>(kMaxStreamSteps)));
}

std::uint64_t prefetch_depth(const mapper::TileProgram& program, const arch::HardwareModel& hw) {
  const arch::LevelSummary* level = outermost_on_chip(hw);
  if (level == nullptr || level->capacity.value == 0) return 1;
  double per_step = 0;
  for (const mapper::TileStream& s : program.streams)
    per_step += s.read_bytes_per_event + s.read_back_bytes;
  if (per_step <= 0) return kMaxPrefetch;
  const double spare = static_cast<double>(level->capacity.value) *
                       static_cast<double>(level->instances) / 2.0;
  return static_cast<std::uint64_t>(
      std::clamp(std::floor(spare / per_step), 1.0, static_cast<double>(kMaxPrefetch)));
}

std::vector<OpWork> plan_ops(const mapper::Schedule& schedule,
                             std::span<const analytical::PricedOp> priced_ops,
                             const arch::HardwareModel& hw) {
  std::vector<OpWork> works;
  std::size_t result = 0;  // the op's index among the priced ops
  for (std::size_t i = 0; i < schedule.ops.size() && i < priced_ops.size(); ++i) {
    if (!priced_ops[i].result) continue;
    const mapper::ScheduledOp& op = schedule.ops[i];
    const results::OpResult& priced = *priced_ops[i].result;
    OpWork work;
    work.result = result++;
    // A collective's fixed cost is inside its priced cycles (the program below replays them).
    work.launch_cycles = priced.unit == results::OpUnit::Collective
                             ? 0.0
                             : analytical::op_fixed_seconds(op, hw) * hw.clock().value;
    // A split-KV decode attention's combine kernel: a vector kernel's fixed cost more, as the
    // closed form adds (its partial outputs are in the op's bytes).
    if (op.own_kernel && results::mapping_value(priced, "splits") > 1)
      work.launch_cycles += hw.kernel_fixed_seconds(arch::KernelKind::Vector) * hw.clock().value;
    if (op.loop_nest) {
      work.program = op.loop_nest->program;
      work.from_loop_nest = true;
    } else if (priced.unit == results::OpUnit::Collective) {
      work.program = mapper::make_streaming_program(
          1, static_cast<double>(priced.cost.cycles.value), 0, 0);
      work.split = false;
    } else {
      // A fused attention backward's helper kernels (unit_costs.h, kHelperReadBytes) run after
      // the main kernel: their bytes stream apart, with a vector kernel's fixed cost each.
      const auto helper_reads =
          static_cast<double>(results::mapping_value(priced, analytical::kHelperReadBytes));
      const auto helper_writes =
          static_cast<double>(results::mapping_value(priced, analytical::kHelperWriteBytes));
      const double reads = static_cast<double>(priced.cost.dram_reads.value) - helper_reads;
      const double writes = static_cast<double>(priced.cost.dram_writes.value) - helper_writes;
      const auto compute = static_cast<double>(priced.cost.compute_cycles.value);
      work.program = mapper::make_streaming_program(streaming_steps(reads + writes, hw), compute,
                                                    reads, writes);
      if (helper_reads + helper_writes > 0) {
        work.prefetch = prefetch_depth(work.program, hw);
        OpWork helpers;
        helpers.result = work.result;
        helpers.launch_cycles =
            op.own_kernel ? analytical::kBackwardHelperKernels *
                                hw.kernel_fixed_seconds(arch::KernelKind::Vector) * hw.clock().value
                          : 0.0;
        helpers.program = mapper::make_streaming_program(
            streaming_steps(helper_reads + helper_writes, hw), 0.0, helper_reads, helper_writes);
        helpers.prefetch = prefetch_depth(helpers.program, hw);
        works.push_back(std::move(work));
        works.push_back(std::move(helpers));
        continue;
      }
    }
    work.prefetch = prefetch_depth(work.program, hw);
    works.push_back(std::move(work));
  }
  return works;
}

namespace {

using Json = nlohmann::ordered_json;

Json stream_json(const mapper::TileStream& s) {
  return {{"tensor", s.tensor},
          {"role", static_cast<int>(s.role)},
          {"depth", s.depth},
          {"indexed_loops", s.indexed_loops},
          {"events", s.events},
          {"visits", s.visits},
          {"read_bytes_per_event", s.read_bytes_per_event},
          {"write_bytes_per_event", s.write_bytes_per_event},
          {"read_back_bytes", s.read_back_bytes}};
}

mapper::TileStream stream_from(const Json& j) {
  mapper::TileStream s;
  j.at("tensor").get_to(s.tensor);
  const int role = j.at("role").get<int>();
  if (role < static_cast<int>(workload::TensorRole::Input) ||
      role > static_cast<int>(workload::TensorRole::Output))
    throw std::runtime_error(fmt::format("chip plan: tensor role {} is not 0, 1 or 2", role));
  s.role = static_cast<workload::TensorRole>(role);
  j.at("depth").get_to(s.depth);
  j.at("indexed_loops").get_to(s.indexed_loops);
  j.at("events").get_to(s.events);
  j.at("visits").get_to(s.visits);
  j.at("read_bytes_per_event").get_to(s.read_bytes_per_event);
  j.at("write_bytes_per_event").get_to(s.write_bytes_per_event);
  j.at("read_back_bytes").get_to(s.read_back_bytes);
  return s;
}

Json work_json(const OpWork& w) {
  Json loops = Json::array();
  for (const mapper::TileLoop& loop : w.program.loops) loops.push_back({loop.dim, loop.count});
  Json streams = Json::array();
  for (const mapper::TileStream& s : w.program.streams) streams.push_back(stream_json(s));
  return {{"result", w.result},
          {"loops", loops},
          {"steps", w.program.steps},
          {"compute_cycles_per_step", w.program.compute_cycles_per_step},
          {"streams", streams},
          {"launch_cycles", w.launch_cycles},
          {"split", w.split},
          {"prefetch", w.prefetch},
          {"from_loop_nest", w.from_loop_nest}};
}

OpWork work_from(const Json& j) {
  OpWork w;
  j.at("result").get_to(w.result);
  for (const Json& loop : j.at("loops"))
    w.program.loops.push_back({loop.at(0).get<std::uint8_t>(), loop.at(1).get<std::uint64_t>()});
  j.at("steps").get_to(w.program.steps);
  j.at("compute_cycles_per_step").get_to(w.program.compute_cycles_per_step);
  for (const Json& s : j.at("streams")) w.program.streams.push_back(stream_from(s));
  j.at("launch_cycles").get_to(w.launch_cycles);
  j.at("split").get_to(w.split);
  j.at("prefetch").get_to(w.prefetch);
  j.at("from_loop_nest").get_to(w.from_loop_nest);
  return w;
}

}  // namespace

void to_json(nlohmann::ordered_json& j, const ChipPlan& plan) {
  const ChipParams& c = plan.chip;
  const DramParams& d = c.dram;
  Json works = Json::array();
  for (const OpWork& w : plan.works) works.push_back(work_json(w));
  j = {{"cores", c.cores},
       {"dram",
        {{"bytes_per_cycle", d.bytes_per_cycle},
         {"channels", d.channels},
         {"latency_cycles", d.latency_cycles},
         {"banks_per_channel", d.banks_per_channel},
         {"row_bytes", d.row_bytes},
         {"row_miss_cycles", d.row_miss_cycles},
         {"interleave_bytes", d.interleave_bytes}}},
       {"link", c.link ? Json{{"bytes_per_cycle", c.link->bytes_per_cycle},
                              {"latency_cycles", c.link->latency_cycles}}
                       : Json(nullptr)},
       {"link_shared", c.link_shared},
       {"double_buffered", c.double_buffered},
       {"clock_hz", c.clock_hz},
       {"notes", c.notes},
       {"works", works}};
}

void from_json(const nlohmann::ordered_json& j, ChipPlan& plan) {
  plan = {};
  ChipParams& c = plan.chip;
  j.at("cores").get_to(c.cores);
  const Json& d = j.at("dram");
  d.at("bytes_per_cycle").get_to(c.dram.bytes_per_cycle);
  d.at("channels").get_to(c.dram.channels);
  d.at("latency_cycles").get_to(c.dram.latency_cycles);
  d.at("banks_per_channel").get_to(c.dram.banks_per_channel);
  d.at("row_bytes").get_to(c.dram.row_bytes);
  d.at("row_miss_cycles").get_to(c.dram.row_miss_cycles);
  d.at("interleave_bytes").get_to(c.dram.interleave_bytes);
  if (const Json& link = j.at("link"); !link.is_null())
    c.link = LinkParams{link.at("bytes_per_cycle").get<double>(),
                        link.at("latency_cycles").get<double>()};
  j.at("link_shared").get_to(c.link_shared);
  j.at("double_buffered").get_to(c.double_buffered);
  j.at("clock_hz").get_to(c.clock_hz);
  j.at("notes").get_to(c.notes);
  for (const Json& w : j.at("works")) plan.works.push_back(work_from(w));
}

}  // namespace coda::sim::timing
