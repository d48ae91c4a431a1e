#include "reports/bound_analysis.h"

#include <algorithm>
#include <cctype>

namespace coda::reports {
namespace {

const LevelRoof* find_roof(const Machine& machine, std::string_view level) {
  for (const LevelRoof& roof : machine.levels)
    if (roof.name == level) return &roof;
  return nullptr;
}

// Bytes per level, reads and writes of every tensor, in the order the traffic names the levels.
std::vector<std::pair<std::string, std::uint64_t>> level_bytes(const results::OpResult& op) {
  std::vector<std::pair<std::string, std::uint64_t>> out;
  for (const results::TensorTraffic& t : op.traffic) {
    auto it = std::find_if(out.begin(), out.end(), [&](const auto& e) { return e.first == t.level; });
    if (it == out.end()) it = out.insert(out.end(), {t.level, 0});
    it->second += t.reads.value + t.writes.value;
  }
  if (op.traffic.empty()) {  // only the totals: on-chip and DRAM
    const results::Cost& c = op.cost;
    if (c.sram_reads.value + c.sram_writes.value > 0)
      out.emplace_back("sram", c.sram_reads.value + c.sram_writes.value);
    if (c.dram_reads.value + c.dram_writes.value > 0)
      out.emplace_back("dram", c.dram_reads.value + c.dram_writes.value);
  }
  return out;
}

}  // namespace

std::string class_label(const OpBound& op) {
  if (op.bound == BoundClass::Memory)
    return op.level.empty() ? "memory" : "memory(" + op.level + ")";
  return std::string(to_string(op.bound));
}

Machine machine_from_run(const results::RunResult& run) {
  return {static_cast<double>(run.processing_elements) * run.clock.value, {},
          "processing_elements x clock of the run"};
}

std::string_view to_string(BoundClass c) {
  switch (c) {
    case BoundClass::Compute: return "compute";
    case BoundClass::Memory: return "memory";
    case BoundClass::Latency: return "latency";
  }
  return "?";
}

std::string op_class(const results::OpResult& op) {
  const auto dot = op.name.rfind('.');
  std::string name = dot == std::string::npos ? op.name : op.name.substr(dot + 1);
  while (!name.empty() &&
         (std::isdigit(static_cast<unsigned char>(name.back())) != 0 || name.back() == '_'))
    name.pop_back();
  if (!name.empty()) return name;
  return std::string(results::to_string(op.unit));
}

std::vector<OpBound> classify_ops(const results::RunResult& run, const Machine& machine) {
  std::vector<OpBound> out;
  const double clock = run.clock.value;
  for (const results::OpResult& op : run.ops) {
    OpBound b;
    b.op = op.name;
    b.op_class = op_class(op);
    b.seconds = clock > 0 ? static_cast<double>(op.cost.cycles.value) / clock : 0.0;
    b.macs = op.cost.macs;
    const auto macs = static_cast<double>(op.cost.macs);
    for (const auto& [level, bytes] : level_bytes(op)) {
      LevelLoad load{level, bytes, bytes > 0 ? macs / static_cast<double>(bytes) : 0.0, {}, {}};
      if (const LevelRoof* roof = find_roof(machine, level); roof && roof->bytes_per_second > 0) {
        if (machine.peak_macs_per_second > 0)
          load.balance = machine.peak_macs_per_second / roof->bytes_per_second;
        if (b.seconds > 0)
          load.busy = static_cast<double>(bytes) / roof->bytes_per_second / b.seconds;
      }
      b.levels.push_back(std::move(load));
    }
    b.compute_busy = op.cost.cycles.value > 0 ? static_cast<double>(op.cost.compute_cycles.value) /
                                                    static_cast<double>(op.cost.cycles.value)
                                              : 0.0;
    // The level the op is furthest below the balance of: the smallest intensity / balance.
    const LevelLoad* tightest = nullptr;
    for (const LevelLoad& load : b.levels)
      if (load.balance && load.bytes > 0 &&
          (tightest == nullptr ||
           load.macs_per_byte / *load.balance < tightest->macs_per_byte / *tightest->balance))
        tightest = &load;
    if (op.bound == results::Bound::Latency) {
      b.bound = BoundClass::Latency;
      b.basis = "engine";
    } else if (macs > 0 && tightest != nullptr) {
      b.basis = "roofline";
      if (tightest->macs_per_byte < *tightest->balance) {
        b.bound = BoundClass::Memory;
        b.level = tightest->level;
      }
    } else {
      b.basis = "engine";
      if (op.bound == results::Bound::Memory) {
        b.bound = BoundClass::Memory;
        const LevelLoad* busiest = nullptr;
        for (const LevelLoad& load : b.levels)
          if (load.busy && (busiest == nullptr || *load.busy > *busiest->busy)) busiest = &load;
        if (busiest != nullptr) b.level = busiest->level;
      }
    }
    if (b.bound == BoundClass::Latency) {
      b.bottleneck = "latency";
    } else {
      b.bottleneck = "compute";
      b.bottleneck_busy = b.compute_busy;
      for (const LevelLoad& load : b.levels)
        if (load.busy && *load.busy > b.bottleneck_busy) {
          b.bottleneck = load.level;
          b.bottleneck_busy = *load.busy;
        }
    }
    out.push_back(std::move(b));
  }
  return out;
}

std::vector<ClassShare> class_shares(const std::vector<OpBound>& ops) {
  std::vector<ClassShare> out;
  double total = 0;
  const auto add = [&](const std::string& name, double seconds) {
    auto it = std::find_if(out.begin(), out.end(), [&](const ClassShare& s) { return s.label == name; });
    if (it == out.end()) it = out.insert(out.end(), {name, 0.0, 0.0});
    it->seconds += seconds;
  };
  for (const BoundClass c : {BoundClass::Compute, BoundClass::Memory, BoundClass::Latency})
    for (const OpBound& op : ops)
      if (op.bound == c) add(class_label(op), op.seconds);
  for (const OpBound& op : ops) total += op.seconds;
  for (ClassShare& s : out) s.share = total > 0 ? s.seconds / total : 0.0;
  return out;
}

}  // namespace coda::reports
