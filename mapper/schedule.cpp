#include "mapper/schedule.h"

#include <fmt/format.h>

namespace coda::mapper {
namespace {

using workload::OpKind;

std::string article(std::string_view word) {
  return fmt::format("{} {}", word.find_first_of("aeiou") == 0 ? "an" : "a", word);
}

std::string describe(const workload::Op& op) {
  return op.function == workload::Function::None
             ? article(workload::to_string(op.kind)) + " op"
             : fmt::format("{} op ({})", article(workload::to_string(op.kind)),
                           workload::to_string(op.function));
}

// The precision an op computes in: its first input's element type.
DataType op_precision(const workload::Op& op) {
  for (const workload::TensorAccess& access : op.space.accesses)
    if (access.role == workload::TensorRole::Input) return access.dtype;
  return op.space.accesses.empty() ? DataType::Int8 : op.space.accesses.front().dtype;
}

DataType output_precision(const workload::Op& op, DataType fallback) {
  for (const workload::TensorAccess& access : op.space.accesses)
    if (access.role == workload::TensorRole::Output) return access.dtype;
  return fallback;
}

std::string supported_list(const arch::ComputeUnitSpec& unit) {
  std::string out;
  for (const auto& [type, rate] : unit.rates)
    out += (out.empty() ? "" : ", ") + std::string(to_string(type));
  return out;
}

std::uint32_t element_bytes(DataType type) { return (bit_width(type) + 7) / 8; }

}  // namespace

std::string_view to_string(Placement placement) {
  switch (placement) {
    case Placement::Systolic: return "systolic";
    case Placement::TensorCore: return "tensor_core";
    case Placement::Vector: return "vector";
    case Placement::Transfer: return "transfer";
    case Placement::Collective: return "collective";
  }
  return "?";
}

Schedule schedule_graph(const workload::Graph& graph, const arch::HardwareModel& hw,
                        const ScheduleOptions& options) {
  Schedule schedule{graph.name, {}, {}};
  schedule.ops.reserve(graph.ops.size());
  // Schema-1 arrays count words, not precisions: every op runs at the word size.
  const bool word_machine = hw.spec().word_size.has_value();
  for (const workload::Op& op : graph.ops) {
    const DataType precision = options.precision.value_or(op_precision(op));
    ScheduledOp scheduled{op.name, workload::mac_count(op), {}, Placement::Systolic, precision, {}};
    const auto unsupported = [&](std::string reason) {
      schedule.unsupported.push_back({op.name, std::move(reason), op.source});
    };
    // Whether `unit` computes at the op's precision; reports it when not.
    const auto supports = [&](const arch::ComputeUnitSpec& unit) {
      if (word_machine || unit.rates.contains(precision)) return true;
      unsupported(fmt::format("{} is in {}, which '{}''s {} unit '{}' does not compute (it does: "
                              "{}); give the workload that precision, or run with --precision",
                              describe(op), to_string(precision), hw.name(),
                              arch::to_string(unit.kind), unit.name, supported_list(unit)));
      return false;
    };

    switch (op.kind) {
      case OpKind::Contraction: {
        const arch::ComputeUnitSpec* unit = hw.matrix_unit();
        if (!unit) {
          unsupported(fmt::format("{} cannot run on '{}': it has no matrix unit (systolic or "
                                  "tensor_core)",
                                  describe(op), hw.name()));
          continue;
        }
        if (!supports(*unit)) continue;
        if (unit->kind == arch::UnitKind::Systolic) {
          scheduled.mapping = map_onto_array(op, hw);
        } else {
          scheduled.placement = Placement::TensorCore;
          scheduled.work = TensorCoreWork{workload::gemm_view(op), element_bytes(precision),
                                          element_bytes(output_precision(op, precision))};
        }
        break;
      }
      case OpKind::Elementwise:
      case OpKind::Reduction:
      case OpKind::Normalization:
      case OpKind::Pooling:
      case OpKind::Optimizer: {
        const arch::ComputeUnitSpec* unit = hw.vector_unit();
        if (!unit) {
          unsupported(fmt::format("{} cannot run on '{}': {} computes contractions only, and "
                                  "this one has no vector unit",
                                  describe(op), hw.name(),
                                  hw.matrix_unit() && hw.matrix_unit()->kind ==
                                                          arch::UnitKind::Systolic
                                      ? "a systolic array"
                                      : "its matrix unit"));
          continue;
        }
        // A vector unit without the op's precision computes it in fp32 (inputs widened on load),
        // as GPUs do for bf16 elementwise math.
        if (!word_machine && !unit->rates.contains(precision)) {
          if (!unit->rates.contains(DataType::Fp32)) {
            (void)supports(*unit);  // reports it
            continue;
          }
          scheduled.precision = DataType::Fp32;
        }
        scheduled.placement = Placement::Vector;
        scheduled.work = VectorWork{op.kind, op.function, workload::iteration_points(op),
                                    workload::tensor_bytes(op, workload::TensorRole::Input) +
                                        workload::tensor_bytes(op, workload::TensorRole::Weight),
                                    workload::tensor_bytes(op, workload::TensorRole::Output)};
        break;
      }
      case OpKind::DataMovement: {
        scheduled.placement = Placement::Transfer;
        TransferWork transfer;
        if (op.function != workload::Function::Reshape) {
          transfer.reads = workload::tensor_bytes(op, workload::TensorRole::Input);
          transfer.writes = workload::tensor_bytes(op, workload::TensorRole::Output);
        }
        scheduled.work = transfer;
        break;
      }
      case OpKind::Collective: {
        const auto* spec = std::get_if<workload::CollectiveSpec>(&op.attributes);
        const std::uint32_t ranks = spec ? spec->ranks : 1;
        const auto& links = hw.spec().interconnect;
        if (ranks > 1 && !links) {
          unsupported(fmt::format("{} over {} ranks cannot run on '{}': it has no chip-to-chip "
                                  "links (add interconnect: to the arch)",
                                  describe(op), ranks, hw.name()));
          continue;
        }
        if (ranks > 1 && links->chips < ranks) {
          unsupported(fmt::format("{} spans {} ranks, but '{}' joins {} chips", describe(op),
                                  ranks, hw.name(), links->chips));
          continue;
        }
        scheduled.placement = Placement::Collective;
        scheduled.work = CollectiveWork{op.function, ranks,
                                        workload::tensor_bytes(op, workload::TensorRole::Output)};
        break;
      }
      case OpKind::Attention:
        unsupported(fmt::format("{} is not placed as one op yet: decompose it into GEMMs and a "
                                "softmax first (coda workload --passes decompose-attention)",
                                describe(op)));
        continue;
    }
    schedule.ops.push_back(std::move(scheduled));
  }
  return schedule;
}

}  // namespace coda::mapper
