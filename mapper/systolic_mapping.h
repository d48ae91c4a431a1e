#pragma once
// How an op is laid onto a systolic array. The array sees every contraction as a GEMM
// (workload::gemm_view): M' = output pixels, N' = filters, K' = the reduction window R*S*C.
// Each dataflow keeps two of them on the array's rows and columns (Sr, Sc) and streams the
// third through time (T), as SCALE-Sim v2's compute modules do:
//
//   output stationary  Sr = M', Sc = N', T = K'
//   weight stationary  Sr = K', Sc = N', T = M'
//   input stationary   Sr = K', Sc = M', T = N'
//
// The work folds over an R x C array in ceil(Sr/R) x ceil(Sc/C) folds, run one after another
// with the column fold as the outer loop (SCALE-Sim's order); conv groups run one after another.

#include <cstdint>
#include <optional>

#include "arch/hardware_model.h"
#include "workloads/op.h"

namespace coda::mapper {

// Which GEMM dimension an operand's two ranks use.
enum class GemmDim : std::uint8_t { M, N, K };

struct SystolicMapping {
  arch::Dataflow dataflow = arch::Dataflow::OutputStationary;
  workload::GemmView gemm;  // batch = groups run one after another
  GemmDim row_dim = GemmDim::M;
  GemmDim col_dim = GemmDim::N;
  GemmDim time_dim = GemmDim::K;
  std::uint64_t sr = 0;  // extent mapped onto the rows
  std::uint64_t sc = 0;  // extent mapped onto the columns
  std::uint64_t t = 0;   // extent streamed through time
  std::uint64_t row_folds = 0;
  std::uint64_t col_folds = 0;
  std::uint64_t arrays = 1;  // arrays running a slice each, in parallel
  // The op's iteration space and tensors, each access with its element type (re-typed to the
  // run's precision when it overrides the op's): what the traffic model prices each operand at
  // and where a fold's tile sits in the tensors it reads (sim/analytical/systolic_traffic.h).
  // The GEMM dims flatten the op's dims in the op's order, the first outermost.
  workload::Einsum space;
  friend bool operator==(const SystolicMapping&, const SystolicMapping&) = default;
};

// Precondition: op.kind == Contraction. `precision`, when given, re-types every tensor of the
// op (a run-wide --precision).
SystolicMapping map_onto_array(const workload::Op& op, const arch::HardwareModel& hw,
                               std::optional<DataType> precision = std::nullopt);

// The systolic mapping of one array when an op is split over `arrays` arrays (the chip's cores
// and each core's instances): the larger of M and N is cut into `arrays` slices of
// ceil(extent / arrays), one per array, run in parallel. `gemm` above is one slice; with one
// array it is the whole op.
std::uint64_t split_over_arrays(workload::GemmView& gemm, std::uint64_t arrays);

}  // namespace coda::mapper
