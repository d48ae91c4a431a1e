#pragma once
// Prices the published-only kernels of the measurement corpus (validation/published/README.md)
// with coda's own models, so a published row is compared with what `coda run` would predict for
// the same work. docs/validation.md, "How published rows are priced", lists each kernel's model;
// in short:
//
//   gemm              the tensor-core GEMM model (gpu_model.h) with its best thread-block tile,
//                     through the row's instruction path (impl) or the arch's GEMM path; fp32
//                     rows run on the CUDA cores. C is written in the input type (fp8: bf16, as
//                     FP8 GEMM libraries write; int8: int32).
//   attention_fwd/bwd fused_attention_cost (unit_costs.h) with the row's implementation class
//                     (fa2, fa3; empty: the arch's), blocks of 128 queries; `unfused` runs
//                     decompose-attention's three kernels through the schedule.
//   attention_fwd_bwd the forward plus the backward, each priced as above with its own fixed
//                     cost (the figures time them apart and add the means); `unfused` is not
//                     priced (no unfused backward).
//   attention_decode  fused_attention_cost with one query per sequence.
//   softmax, norms, gelu, silu, copy
//                     one op of coda's graph through the schedule and the analytical engine.
//   collectives       price_collective (unit_costs.h) on the arch's interconnect, plus the
//                     collective kernel's fixed cost; `ring`/`tree`/`nvls` force NCCL's
//                     algorithm (an arch stating no such pair skips the row with that reason).
//   llm_train         one optimizer step per GPU of FSDP data parallelism (llm_train in the .cpp):
//                     its all-gathers and reduce-scatter priced by price_cluster_collective
//                     (sim/analytical/cluster_collective.h) among dp ranks, as many per node as
//                     a node holds (at most dp), on the row's cluster when dp spans nodes.
//   llm_*             the LLM preset `model` (configs/workloads/llm/<model>.yaml) at the row's
//                     dtype and TP, built by the LLM builder, scheduled with FlashAttention and
//                     epilogue fusion (what inference engines run) on the analytical engine:
//                     prefill = one prefill step; decode = the mean of the first and the last
//                     of the output_len decode steps (a step's time is affine in the context
//                     length, so this is the mean over all of them); generate = prefill +
//                     (output_len - 1) decode steps (the prefill yields the first token).
//                     A row's impl (grouped, per_head) sets the decode attention's class; every
//                     step (prefill, each decode step) adds calibration.llm_step_fixed_cost.
//   network           the CNN-zoo network `model` at the row's batch and dtype, epilogue fusion.
//
// Pure and thread-safe; nothing is printed.

#include <filesystem>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>

#include "arch/cluster_spec.h"
#include "arch/hardware_model.h"
#include "mapper/schedule.h"
#include "validation/measurement.h"

namespace coda::validation {

struct Prediction;

// The schedules of whole-model rows (llm_*, network), made once per arch and step and reused
// while a fit prices the same rows under other calibrations (a schedule depends on the units and
// capacities of the hardware, not on its rates). Keyed by the arch's name and the step: valid for
// archs that differ in their calibration only. Thread-safe.
class ScheduleCache {
 public:
  // The cached schedule for `key`, or the one `make` returns (cached then); null when `make`
  // returns nullopt (nothing is cached).
  template <class Make>
  std::shared_ptr<const mapper::Schedule> get(const std::string& key, Make make) {
    {
      const std::lock_guard lock(mutex_);
      if (const auto it = schedules_.find(key); it != schedules_.end()) return it->second;
    }
    std::optional<mapper::Schedule> made = make();
    if (!made) return nullptr;
    auto shared = std::make_shared<const mapper::Schedule>(std::move(*made));
    const std::lock_guard lock(mutex_);
    return schedules_.emplace(key, std::move(shared)).first->second;
  }

 private:
  std::mutex mutex_;
  std::map<std::string, std::shared_ptr<const mapper::Schedule>> schedules_;
};

struct PublishedPricing {
  std::filesystem::path llm_dir;  // where llm_* rows find their model: configs/workloads/llm
  ScheduleCache* cache = nullptr;  // borrowed; null: every whole-model row is scheduled anew
};

// nullopt with `why` set when coda cannot price the row on this arch (a precision the tensor
// cores lack, an implementation the arch cannot run, an unknown model, more ranks than the
// interconnect joins, ...). `cuda_cores`: the arch's CUDA-core view (compare.h Predictor), for
// fp32 GEMMs; null when the arch has none. `cluster`: the cluster the row's device runs on (its
// corpus entry's `cluster:`), for llm_train rows whose dp spans nodes; null: one node.
// Precondition: info(m.kernel).published_only.
std::optional<Prediction> predict_published(const Measurement& m, const arch::HardwareModel& hw,
                                            const arch::HardwareModel* cuda_cores,
                                            const PublishedPricing& pricing, std::string& why,
                                            const arch::ClusterSpec* cluster = nullptr);

}  // namespace coda::validation
