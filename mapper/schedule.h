#pragma once
// The schedule: every op of a graph in execution order, placed on a unit of the hardware with
// the work that unit needs to price it, and the ops the hardware cannot run (each a value with a
// reason). Engines consume this.
//
// Placement is a fixed rule until the mapper's search lands (docs/arch.md, "Which unit runs an
// op"):
//   contraction        -> the matrix unit: a systolic array (SystolicMapping) or tensor cores
//                         (TensorCoreWork; the engine picks the thread-block tile)
//   elementwise, reduction, normalization, pooling, optimizer
//                      -> the vector unit (VectorWork)
//   data movement      -> a copy through DRAM (TransferWork); a reshape moves nothing
//   collective         -> the chip-to-chip links (CollectiveWork)
//   attention          -> not placed: decompose it first (coda workload --passes decompose-attention)
// An op runs at the precision of its first input; a matrix unit that lacks it cannot run the op
// (unless ScheduleOptions::precision overrides every op's precision); a vector unit that lacks it
// computes in fp32 when it can. Schema-1 arrays count words, not precisions, and run everything.

#include <cstdint>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "arch/hardware_model.h"
#include "core/data_type.h"
#include "mapper/systolic_mapping.h"
#include "workloads/graph.h"
#include "workloads/op.h"

namespace coda::mapper {

enum class Placement : std::uint8_t { Systolic, TensorCore, Vector, Transfer, Collective };
std::string_view to_string(Placement placement);

// A GEMM on a GPU's tensor cores.
struct TensorCoreWork {
  workload::GemmView gemm;
  std::uint32_t input_bytes = 2;   // per element of A and B
  std::uint32_t output_bytes = 2;  // per element of C
  friend bool operator==(const TensorCoreWork&, const TensorCoreWork&) = default;
};

// An op of the vector unit: `elements` output points (for a reduction, input points) of
// `function`, reading and writing the bytes of the tensors it touches.
struct VectorWork {
  workload::OpKind kind = workload::OpKind::Elementwise;
  workload::Function function = workload::Function::None;
  std::uint64_t elements = 0;
  Bytes reads;
  Bytes writes;
  friend bool operator==(const VectorWork&, const VectorWork&) = default;
};

// A copy through memory; a reshape is free (`bytes` zero).
struct TransferWork {
  Bytes reads;
  Bytes writes;
  friend bool operator==(const TransferWork&, const TransferWork&) = default;
};

struct CollectiveWork {
  workload::Function function = workload::Function::AllReduce;
  std::uint32_t ranks = 1;
  Bytes bytes;  // the buffer each rank holds (all-gather: the gathered output)
  friend bool operator==(const CollectiveWork&, const CollectiveWork&) = default;
};

using Work = std::variant<std::monostate, TensorCoreWork, VectorWork, TransferWork, CollectiveWork>;

struct ScheduledOp {
  std::string name;
  std::uint64_t macs = 0;
  SystolicMapping mapping;  // Placement::Systolic
  Placement placement = Placement::Systolic;
  DataType precision = DataType::Int8;
  Work work;  // every other placement
};

// An op the hardware has no unit for. Infeasibility is a value with a reason; the driver decides
// whether it is an error.
struct UnsupportedOp {
  std::string name;
  std::string reason;
  SourceLocation source;
};

struct Schedule {
  std::string workload;
  std::vector<ScheduledOp> ops;
  std::vector<UnsupportedOp> unsupported;
};

struct ScheduleOptions {
  std::optional<DataType> precision;  // run every op at this precision
};

Schedule schedule_graph(const workload::Graph& graph, const arch::HardwareModel& hw,
                        const ScheduleOptions& options = {});

}  // namespace coda::mapper
