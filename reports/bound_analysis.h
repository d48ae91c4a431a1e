#pragma once
// Compute- vs memory-bound classification and bottleneck attribution of each op of a stored run,
// on the roofline: an op's arithmetic intensity at a memory level (MACs per byte moved there)
// against the machine's balance at that level (peak MACs per second / the level's bandwidth).
// docs/report.md states the formulas.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/results.h"

namespace coda::reports {

// A level (or link) with a bandwidth limit, named as the run's traffic entries name it
// ("sram", "l2", "dram", "link").
struct LevelRoof {
  std::string name;
  double bytes_per_second = 0;  // reads and writes together
  friend bool operator==(const LevelRoof&, const LevelRoof&) = default;
};

// What the roofline needs of the machine a run ran on.
struct Machine {
  double peak_macs_per_second = 0;  // 0: unknown
  std::vector<LevelRoof> levels;    // only levels with a limit; innermost first
  std::string source;               // where the numbers come from, for the report
  // The element type the peak is at (the run's: its ops' with the most MACs); empty: the run's
  // recorded peak, its matrix units' fastest.
  std::string peak_precision;
  // The matrix unit's peaks at its other element types (MACs per second), drawn as thinner roofs.
  std::vector<std::pair<std::string, double>> other_peaks;
  friend bool operator==(const Machine&, const Machine&) = default;
};

// The peak from the run itself: processing_elements x clock (MACs per second; for a GPU the
// engine records its matrix units' MACs per cycle at their fastest precision). No levels: a
// RunResult records no bandwidths (the CLI adds them from the arch file).
Machine machine_from_run(const results::RunResult& run);

enum class BoundClass { Compute, Memory, Latency };
std::string_view to_string(BoundClass c);

// One op's intensity and load at one level it moved bytes through.
struct LevelLoad {
  std::string level;
  std::uint64_t bytes = 0;                 // reads + writes of every tensor at the level
  double macs_per_byte = 0;                // MACs / bytes (0 when no bytes)
  std::optional<double> balance;           // peak MACs/s / bandwidth; nullopt: no known limit
  std::optional<double> busy;              // (bytes / bandwidth) / the op's time
};

struct OpBound {
  std::string op;
  std::string op_class;  // the kind of op, from its name (op_class below)
  double seconds = 0;    // the op's time: cycles / clock
  std::uint64_t macs = 0;
  BoundClass bound = BoundClass::Compute;
  std::string level;     // for Memory: the level whose balance the op is furthest below
  // How bound was decided: "roofline" (intensity against balance) or "engine" (the bound the
  // engine recorded, used when the machine lacks the numbers or the op has no MACs).
  std::string basis;
  std::vector<LevelLoad> levels;  // in the order of the op's traffic entries
  double compute_busy = 0;        // compute_cycles / cycles
  // The resource that is busiest over the op's time: "compute", a level's name, or "latency"
  // when the engine recorded a fixed latency (kernel launch, per-hop latency) as the bound.
  std::string bottleneck;
  double bottleneck_busy = 0;     // its busy share (0 for latency)
};

// "compute", "memory(dram)" ("memory" when the level is unknown) or "latency".
std::string class_label(const OpBound& op);

// The kind of op for the breakdowns: the last '.'-separated part of its name without trailing
// digits and '_' ("layer1.0.conv2" -> "conv", "layer0.ffn_up" -> "ffn_up"); the op's unit when
// that leaves nothing.
std::string op_class(const results::OpResult& op);

std::vector<OpBound> classify_ops(const results::RunResult& run, const Machine& machine);

// The share of the run's time (sum of op seconds) in each class: "compute", "memory(dram)", ...,
// "latency", in that order (memory levels in the order the ops first name them); classes no op
// falls in are left out.
struct ClassShare {
  std::string label;
  double seconds = 0;
  double share = 0;  // of the total; 0 when the run took no time
};
std::vector<ClassShare> class_shares(const std::vector<OpBound>& ops);

}  // namespace coda::reports
