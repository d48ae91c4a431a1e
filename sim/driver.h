#pragma once
// The run driver: files in, RunResult out. Reads and validates the arch and the workload,
// schedules the graph (planning fusion, searching mappings when asked, planning memory), runs the
// chosen engine and records provenance (content hashes of the inputs, engine, coda version), the
// fusion groups, how contractions were mapped and the memory footprint.

#include <filesystem>
#include <optional>
#include <string>

#include "arch/arch_spec.h"
#include "core/data_type.h"
#include "core/diagnostics.h"
#include "core/results.h"
#include "mapper/fusion.h"
#include "mapper/schedule.h"
#include "sim/engine.h"
#include "workloads/graph.h"
#include "workloads/source.h"

namespace coda::sim {

void register_builtin_engines(EngineRegistry& registry);

struct RunFiles {
  // The arch file; with `arch_spec` set, only the name diagnostics and provenance give it.
  std::filesystem::path arch;
  // A workload file (workloads/importers.h's load_workload), or, when `source` is set, that
  // source instead (a file with ONNX options, an LLM or a CNN of the zoo: workloads/source.h).
  std::filesystem::path workload;
  std::string engine = "analytical";
  // Leave out the ops the hardware has no unit for, listing them in RunResult::skipped, instead
  // of failing with a diagnostic for each.
  bool skip_unsupported = false;
  // Run every op at this precision instead of its tensors' own.
  std::optional<DataType> precision;
  // Which ops run fused (mapper/fusion.h, docs/fusion.md); None prices every op on its own.
  // nullopt: the fusion the arch's vendor compiler applies (calibration.fusion), else None.
  std::optional<mapper::FusionMode> fusion;
  // Search a loop-nest mapping for every contraction (mapper/search.h); nullopt: the closed
  // forms' fixed rule.
  std::optional<mapper::ScheduleSearch> search;
  // The engines to choose `engine` from; null: register_builtin_engines' (the analytical one).
  // The SystemC engine lives in its own library (sim/systemc/), which callers add.
  const EngineRegistry* engines = nullptr;
  // The engine's timeline (RunOptions::trace); empty: none.
  std::filesystem::path trace;
  // The fused-attention implementation, over the arch's choice (calibration.attention).
  std::optional<arch::AttentionImpl> attention;
  // The decode-attention class, over the arch's (calibration.decode_attention).
  std::optional<arch::DecodeAttention> decode_attention;
  // Kernels issued one by one by the host (calibration.eager_issue_time apart at the least)
  // instead of from a CUDA graph; the arch must state the issue time.
  bool eager = false;
  std::optional<workload::WorkloadSource> source;
  // An arch already read (and perhaps edited: the Python API's Arch.with_values), run instead of
  // reading `arch`.
  std::optional<arch::LoadedArch> arch_spec;
};

// Sets the arch's fused-attention and decode-attention classes to the command line's choices
// (nullopt: the arch's own), with an error naming `arch_file` when the arch cannot run the one
// chosen (no tensor cores; fa3 without wgmma; triton without calibration.attention_triton).
bool apply_attention_choice(arch::ArchSpec& spec, const std::filesystem::path& arch_file,
                            std::optional<arch::AttentionImpl> attention,
                            std::optional<arch::DecodeAttention> decode_attention,
                            Diagnostics& diags);

// nullopt when an input has errors (they are in `diags`); throws std::invalid_argument for an
// unknown engine name.
std::optional<results::RunResult> run_files(const RunFiles& files, Diagnostics& diags);

// Marks `run` (the engine's result for `schedule`) as launched eagerly, `issue` seconds a kernel
// at the least (calibration.eager_issue_time), and sets its host_wait: the kernels (an op that
// launches its own, with the ops fused into it) through analytical::host_issued_seconds, less
// the ops' own time.
void add_host_issue(results::RunResult& run, const mapper::Schedule& schedule, double issue);

// Runs `schedule` (made from `graph` on `hw`) on `engine` and records what a run records beyond
// the engine's own result: the ops skipped, the fusion groups and rejected candidates (by op
// name), how contractions were mapped (`search`, as the schedule was made) and the memory
// footprint. run_files and the sweep executor both call it.
results::RunResult run_schedule(const Engine& engine, const mapper::Schedule& schedule,
                                const workload::Graph& graph, const arch::HardwareModel& hw,
                                const std::optional<mapper::ScheduleSearch>& search,
                                const RunOptions& options = {});

// The run's DRAM footprint and its fit, from the schedule's memory plan.
results::MemoryFootprint memory_footprint(const mapper::Schedule& schedule);

// FNV-1a 64 of a file's bytes (0 when it cannot be read).
std::uint64_t file_hash(const std::filesystem::path& file);

}  // namespace coda::sim
