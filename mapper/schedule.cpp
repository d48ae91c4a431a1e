#include "mapper/schedule.h"

#include <algorithm>
#include <array>
#include <map>
#include <set>
#include <utility>

#include <fmt/format.h>

#include "workloads/builders.h"
#include "workloads/passes/builtin_passes.h"

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

// TensorCoreWork::b_element_bytes of a contraction in its own types: the bytes of its weight
// accesses (the weight and any scales) per element of its first, when that weight is of another
// type than the op computes in or carries scales; 0 otherwise.
double packed_weight_bytes(const workload::Op& op) {
  const DataType precision = op_precision(op);
  const workload::TensorAccess* b = nullptr;
  std::uint64_t bytes = 0;
  bool packed = false;
  for (const workload::TensorAccess& access : op.space.accesses) {
    if (access.role != workload::TensorRole::Weight) continue;
    packed = packed || b != nullptr || access.dtype != precision;
    if (b == nullptr) b = &access;
    bytes += workload::storage_bytes(access.shape, access.dtype).value;
  }
  if (b == nullptr || !packed) return 0;
  return static_cast<double>(bytes) / static_cast<double>(workload::element_count(b->shape));
}

// Places an op of any kind but Attention on its unit; nullopt with `why` set when the hardware
// has no unit for it.
std::optional<ScheduledOp> place(const workload::Op& op, const arch::HardwareModel& hw,
                                 const ScheduleOptions& options, std::string& why) {
  // Schema-1 arrays count words, not precisions: every op runs at the word size.
  const bool word_machine = hw.spec().word_size.has_value();
  const DataType precision = options.precision.value_or(op_precision(op));
  ScheduledOp scheduled{op.name, workload::mac_count(op), {}, Placement::Systolic, precision, {}};
  // Whether `unit` computes at the op's precision; says why not.
  const auto supports = [&](const arch::ComputeUnitSpec& unit) {
    if (word_machine || unit.rates.contains(precision)) return true;
    why = fmt::format("{} is in {}, which '{}''s {} unit '{}' does not compute (it does: {}); "
                      "give the workload that precision, or run with --precision",
                      describe(op), to_string(precision), hw.name(), arch::to_string(unit.kind),
                      unit.name, supported_list(unit));
    return false;
  };

  switch (op.kind) {
    case OpKind::Contraction: {
      const arch::ComputeUnitSpec* unit = hw.matrix_unit();
      if (!unit) {
        why = fmt::format("{} cannot run on '{}': it has no matrix unit (systolic or "
                          "tensor_core)",
                          describe(op), hw.name());
        return std::nullopt;
      }
      if (!supports(*unit)) return std::nullopt;
      if (unit->kind == arch::UnitKind::Systolic) {
        // A run-wide precision re-types the op's tensors when it differs from the op's own.
        scheduled.mapping = map_onto_array(
            op, hw, precision != op_precision(op) ? std::optional{precision} : std::nullopt);
        // The closed form walks a pack's folds one by one (its traffic and stalls, fold by fold)
        // and every pack's in the stall model: bounded, so that an op of absurd size is an error
        // here, not hours of work or memory exhausted.
        if (const SystolicMapping& m = scheduled.mapping;
            static_cast<long double>(m.row_folds) * static_cast<long double>(m.col_folds) *
                static_cast<long double>(m.passes()) >
            static_cast<long double>(kMaxSystolicFolds)) {
          why = fmt::format("{} folds onto '{}' in {} row x {} column folds x {} packs, more than "
                            "the {} (2^24) a systolic op may have: coda prices one fold by fold "
                            "(split the op, or use a larger array)",
                            describe(op), hw.name(), m.row_folds, m.col_folds, m.passes(),
                            kMaxSystolicFolds);
          return std::nullopt;
        }
        // SCALE-Sim runs one GEMM on one array: a layer per group, no packing, no core split.
        if (hw.spec().dram.model == arch::DramModel::ScaleSim &&
            (scheduled.mapping.gemm.batch > 1 || scheduled.mapping.arrays > 1)) {
          const SystolicMapping& m = scheduled.mapping;
          why = fmt::format(
              "{} {}; dram.model: scalesim reproduces SCALE-Sim, which runs one GEMM per layer "
              "on one array (split the op, or use model: coda)",
              describe(op),
              m.gemm.batch > 1 ? fmt::format("is {} GEMMs (groups or batch entries)", m.gemm.batch)
                               : fmt::format("is split over {} arrays", m.arrays));
          return std::nullopt;
        }
      } else {
        scheduled.placement = Placement::TensorCore;
        // The input tensor's bytes, re-typed to the run's precision when it differs.
        const std::uint64_t a_bytes =
            workload::tensor_bytes(op, workload::TensorRole::Input).value *
            bit_width(precision) / bit_width(op_precision(op));
        const std::uint32_t in_bytes = element_bytes(precision);
        const std::uint32_t out_bytes = element_bytes(output_precision(op, precision));
        scheduled.work = TensorCoreWork{workload::gemm_view(op),
                                        in_bytes,
                                        out_bytes,
                                        a_bytes,
                                        gemm_operands_aligned(op, precision),
                                        options.precision ? 0.0 : packed_weight_bytes(op)};
      }
      return scheduled;
    }
    case OpKind::Elementwise:
    case OpKind::Reduction:
    case OpKind::Normalization:
    case OpKind::Pooling:
    case OpKind::Optimizer: {
      const arch::ComputeUnitSpec* unit = hw.vector_unit();
      if (!unit) {
        why = fmt::format("{} cannot run on '{}': {} computes contractions only, and this one "
                          "has no vector unit",
                          describe(op), hw.name(),
                          hw.matrix_unit() && hw.matrix_unit()->kind == arch::UnitKind::Systolic
                              ? "a systolic array"
                              : "its matrix unit");
        return std::nullopt;
      }
      // A vector unit without the op's precision computes it in fp32 (inputs widened on load),
      // as GPUs do for bf16 elementwise math.
      if (!word_machine && !unit->rates.contains(precision)) {
        if (!unit->rates.contains(DataType::Fp32)) {
          (void)supports(*unit);  // says why
          return std::nullopt;
        }
        scheduled.precision = DataType::Fp32;
      }
      scheduled.placement = Placement::Vector;
      scheduled.work = VectorWork{op.kind, op.function, workload::iteration_points(op),
                                  workload::tensor_bytes(op, workload::TensorRole::Input) +
                                      workload::tensor_bytes(op, workload::TensorRole::Weight),
                                  workload::tensor_bytes(op, workload::TensorRole::Output),
                                  op.kind == OpKind::Normalization && !op.space.dims.empty()
                                      ? op.space.dims.back().extent
                                      : 0};
      return scheduled;
    }
    case OpKind::DataMovement: {
      scheduled.placement = Placement::Transfer;
      TransferWork transfer;
      // A reshape, and a split (torch.split and chunk, TensorRT's slices: each part a strided
      // view that its readers take as it is), moves nothing and launches no kernel.
      if (op.function != workload::Function::Reshape &&
          op.function != workload::Function::Split) {
        transfer.reads = workload::tensor_bytes(op, workload::TensorRole::Input);
        transfer.writes = workload::tensor_bytes(op, workload::TensorRole::Output);
      }
      scheduled.work = transfer;
      return scheduled;
    }
    case OpKind::Collective: {
      const auto* spec = std::get_if<workload::CollectiveSpec>(&op.attributes);
      const std::uint32_t ranks = spec ? spec->ranks : 1;
      const auto& links = hw.spec().interconnect;
      if (ranks > 1 && !links) {
        why = fmt::format("{} over {} ranks cannot run on '{}': it has no chip-to-chip links "
                          "(add interconnect: to the arch)",
                          describe(op), ranks, hw.name());
        return std::nullopt;
      }
      if (ranks > 1 && options.collective_ranks.value_or(links->chips) < ranks) {
        why = fmt::format("{} spans {} ranks, but '{}' joins {} chips", describe(op), ranks,
                          hw.name(), options.collective_ranks.value_or(links->chips));
        return std::nullopt;
      }
      scheduled.placement = Placement::Collective;
      scheduled.work = CollectiveWork{op.function, ranks,
                                      workload::tensor_bytes(op, workload::TensorRole::Output)};
      return scheduled;
    }
    case OpKind::Attention: break;  // place_attention
  }
  why = fmt::format("{} has no placement rule", describe(op));
  return std::nullopt;
}

// An attention op as its decomposed parts (see AttentionWork), unfused; schedule_graph marks it
// fused when the fusion plan groups it.
//
// Its DRAM reads: each input access's bytes, but a tensor bound to two of them (MLA's latent
// cache, whose first kv_lora_rank columns are the values and all of whose columns are the keys,
// as FlashMLA reads it) counted once, at the larger of the two.
Bytes attention_reads(const workload::Op& op) {
  std::map<std::uint32_t, Bytes> by_tensor;
  Bytes unbound;
  for (std::size_t i = 0; i < op.space.accesses.size(); ++i) {
    const workload::TensorAccess& a = op.space.accesses[i];
    if (a.role != workload::TensorRole::Input) continue;
    const Bytes bytes = workload::touched_bytes(a, op.space.dims);
    if (i >= op.tensors.size()) {
      unbound += bytes;
      continue;
    }
    Bytes& kept = by_tensor[op.tensors[i].value];
    kept = Bytes{std::max(kept.value, bytes.value)};
  }
  for (const auto& [tensor, bytes] : by_tensor) unbound += bytes;
  return unbound;
}

std::optional<ScheduledOp> place_attention(const workload::Op& op, const arch::HardwareModel& hw,
                                           const ScheduleOptions& options, std::string& why) {
  const workload::AttentionForm form = workload::attention_form(op);
  std::vector<workload::Op> parts;
  if (form == workload::AttentionForm::Forward) {
    workload::Graph alone{op.name, "", {}, {}, {}};
    workload::Op copy = op;
    copy.tensors.clear();
    alone.add(std::move(copy));
    (void)workload::DecomposeAttention{}.run(alone);
    parts = std::move(alone.ops);
  } else if (form == workload::AttentionForm::Backward) {
    parts = workload::decompose_attention_backward(op);
  } else {
    why = fmt::format("{} is not in make_attention's form (dims b, hk, g, q, kv, d; Q, K, V, O) "
                      "nor make_attention_backward's (Q, K, V, O, dO; dQ, dK, dV), so it cannot "
                      "be priced",
                      describe(op));
    return std::nullopt;
  }
  AttentionWork work;
  work.backward = form == workload::AttentionForm::Backward;
  for (const workload::Op& part : parts) {
    std::string part_why;
    std::optional<ScheduledOp> placed = place(part, hw, options, part_why);
    if (!placed) {
      why = fmt::format("{} runs its GEMMs on the matrix unit and its softmax on the vector "
                        "unit; its part '{}' cannot run: {}",
                        describe(op), part.name, part_why);
      return std::nullopt;
    }
    work.parts.push_back(std::move(*placed));
  }
  const auto& dims = op.space.dims;  // b, hk, g, q, kv, d
  const std::uint64_t heads = dims[0].extent * dims[1].extent * dims[2].extent;
  const std::uint64_t q = dims[3].extent, kv = dims[4].extent;
  const auto& spec = std::get<workload::AttentionSpec>(op.attributes);
  work.softcap = spec.softcap > 0;
  work.batch = dims[0].extent;
  work.kv_heads = dims[1].extent;
  work.heads = dims[1].extent * dims[2].extent;
  work.q_len = q;
  work.kv_len = kv;
  work.all_pairs = heads * q * kv;
  work.pairs = heads * workload::attention_kept_pairs(q, kv, spec);
  work.head_dim = dims[5].extent;
  work.value_dim = workload::attention_value_dim(op);
  work.reads = attention_reads(op);
  work.writes = workload::tensor_bytes(op, workload::TensorRole::Output);
  ScheduledOp scheduled{op.name, workload::mac_count(op), {}, Placement::Attention,
                        options.precision.value_or(op_precision(op)), std::move(work)};
  return scheduled;
}

// The bytes of access `a` of `op`, as workload::tensor_bytes counts them.
Bytes access_bytes(const workload::Op& op, std::size_t a) {
  workload::Op probe;
  probe.space.dims = op.space.dims;
  probe.space.accesses = {op.space.accesses[a]};
  return workload::tensor_bytes(probe);
}

Bytes minus(Bytes a, Bytes b) { return Bytes{a.value - std::min(a.value, b.value)}; }

// Takes the bytes of the fused intermediates `op` touches off its DRAM traffic (see the header).
void keep_on_chip(const workload::Op& op, const std::set<std::uint32_t>& on_chip,
                  ScheduledOp& scheduled) {
  if (op.tensors.size() != op.space.accesses.size()) return;
  Bytes reads, writes;
  for (std::size_t a = 0; a < op.tensors.size(); ++a) {
    if (!on_chip.contains(op.tensors[a].value)) continue;
    (op.space.accesses[a].role == workload::TensorRole::Output ? writes : reads) +=
        access_bytes(op, a);
  }
  if (reads.value == 0 && writes.value == 0) return;
  // A role is on chip when every access of it is.
  std::array<int, 3> accesses{}, held{};
  for (std::size_t a = 0; a < op.tensors.size(); ++a) {
    const auto r = static_cast<std::size_t>(op.space.accesses[a].role);
    ++accesses.at(r);
    if (on_chip.contains(op.tensors[a].value)) ++held.at(r);
  }
  const auto all_held = [&](workload::TensorRole role) {
    const auto r = static_cast<std::size_t>(role);
    return accesses.at(r) > 0 && held.at(r) == accesses.at(r);
  };
  if (auto* vector = std::get_if<VectorWork>(&scheduled.work)) {
    vector->reads = minus(vector->reads, reads);
    vector->writes = minus(vector->writes, writes);
  } else if (auto* transfer = std::get_if<TransferWork>(&scheduled.work)) {
    transfer->reads = minus(transfer->reads, reads);
    transfer->writes = minus(transfer->writes, writes);
  } else if (scheduled.placement == Placement::Systolic ||
             scheduled.placement == Placement::TensorCore) {
    scheduled.dram_reads_saved = reads;
    scheduled.dram_writes_saved = writes;
    scheduled.on_chip = {all_held(workload::TensorRole::Input),
                         all_held(workload::TensorRole::Weight),
                         all_held(workload::TensorRole::Output)};
  }
}

std::string role_name(workload::TensorRole role) {
  switch (role) {
    case workload::TensorRole::Input: return "inputs";
    case workload::TensorRole::Weight: return "weights";
    case workload::TensorRole::Output: return "outputs";
  }
  return "?";
}

// Searches the loop-nest mapping of every contraction placed on the matrix unit (map_batch:
// repeated shapes once, distinct ones in parallel).
void search_mappings(const workload::Graph& graph, const arch::HardwareModel& hw,
                     const ScheduleSearch& search, std::vector<std::optional<ScheduledOp>>& placed) {
  MappingCache own_cache;
  MappingCache& cache = search.cache != nullptr ? *search.cache : own_cache;
  std::map<std::pair<DataType, bool>, Hierarchy> hierarchies;  // by precision and alignment
  std::vector<std::pair<DataType, bool>> keys;
  std::vector<std::size_t> ops;           // graph op index of each request
  std::vector<workload::Einsum> einsums;  // the op at the precision it runs at
  for (std::size_t i = 0; i < placed.size(); ++i) {
    if (!placed[i] || (placed[i]->placement != Placement::Systolic &&
                       placed[i]->placement != Placement::TensorCore))
      continue;
    const DataType precision = placed[i]->precision;
    const auto* gemm = std::get_if<TensorCoreWork>(&placed[i]->work);
    const std::pair key{precision, gemm == nullptr || gemm->aligned};
    if (!hierarchies.contains(key))
      hierarchies.emplace(key, make_hierarchy(hw, precision, key.second));
    keys.push_back(key);
    workload::Einsum einsum = graph.ops[i].space;
    if (precision != op_precision(graph.ops[i]))  // an override re-types every tensor
      for (workload::TensorAccess& access : einsum.accesses) access.dtype = precision;
    ops.push_back(i);
    einsums.push_back(std::move(einsum));
  }
  std::vector<MapRequest> requests;
  requests.reserve(ops.size());
  for (std::size_t r = 0; r < ops.size(); ++r)
    requests.push_back({&einsums[r], &hierarchies.at(keys[r])});
  std::vector<MapResult> mapped = map_batch(requests, search.goal, search.settings, cache);

  for (std::size_t r = 0; r < ops.size(); ++r) {
    ScheduledOp& scheduled = *placed[ops[r]];
    MapResult& result = mapped[r];
    scheduled.loop_nest_why = std::move(result.why);
    if (!result.outcome || !result.outcome->found()) {
      if (result.outcome && scheduled.loop_nest_why.empty())
        scheduled.loop_nest_why = "the search found no feasible mapping";
      continue;
    }
    const Hierarchy& hierarchy = *requests[r].hierarchy;
    const workload::Einsum& einsum = einsums[r];
    const Candidate& best = result.outcome->best.front();
    LoopNestPlan plan{best.mapping, best.cost, {}, {}, 0, 0, {}, {}, result.cached,
                      result.cached ? 0 : result.outcome->evaluated};
    plan.program = make_tile_program(compile_problem(einsum), best.mapping, best.cost);
    for (const StorageLevel& level : hierarchy.levels) plan.levels.push_back(level.name);
    for (const workload::TensorAccess& access : einsum.accesses)
      plan.tensors.push_back(role_name(access.role));
    plan.peak_macs_per_cycle =
        static_cast<double>(hierarchy.compute.pes) * hierarchy.compute.macs_per_pe_per_cycle;
    plan.dram_pj_per_byte = hierarchy.levels.back().energy_pj_per_byte;
    plan.loop_nest = to_string(best.mapping, einsum, hierarchy);
    scheduled.loop_nest = std::move(plan);
  }
}

}  // namespace

bool gemm_operands_aligned(const workload::Op& op, DataType precision) {
  for (const workload::TensorAccess& access : op.space.accesses)
    for (const workload::IndexExpr& index : access.indices)
      if (index.terms.size() != 1 || index.terms.front().coefficient != 1) return true;
  const std::uint32_t in_bytes = element_bytes(precision);
  const std::uint32_t out_bytes = element_bytes(output_precision(op, precision));
  for (const workload::TensorAccess& access : op.space.accesses) {
    if (access.indices.empty() || access.shape.empty()) continue;
    const std::uint32_t bytes = access.role == workload::TensorRole::Output ? out_bytes : in_bytes;
    if (access.shape.back() * bytes % arch::kGemmAlignmentBytes != 0) return false;
  }
  return true;
}

DataType op_precision(const workload::Op& op) {
  for (const workload::TensorAccess& access : op.space.accesses)
    if (access.role == workload::TensorRole::Input) return access.dtype;
  return op.space.accesses.empty() ? DataType::Int8 : op.space.accesses.front().dtype;
}

std::string_view to_string(Placement placement) {
  switch (placement) {
    case Placement::Systolic: return "systolic";
    case Placement::TensorCore: return "tensor_core";
    case Placement::Vector: return "vector";
    case Placement::Transfer: return "transfer";
    case Placement::Collective: return "collective";
    case Placement::Attention: return "attention";
  }
  return "?";
}

Schedule schedule_graph(const workload::Graph& graph, const arch::HardwareModel& hw,
                        const ScheduleOptions& options) {
  Schedule schedule{graph.name, {}, {}, plan_fusion(graph, hw, options.fusion)};
  const std::size_t n = graph.ops.size();
  std::vector<std::optional<ScheduledOp>> placed(n);
  for (std::size_t i = 0; i < n; ++i) {
    const workload::Op& op = graph.ops[i];
    std::string why;
    placed[i] = op.kind == OpKind::Attention ? place_attention(op, hw, options, why)
                                             : place(op, hw, options, why);
    if (!placed[i]) schedule.unsupported.push_back({op.name, std::move(why), op.source});
  }
  if (options.search) search_mappings(graph, hw, *options.search, placed);
  schedule.memory = options.memory_plan != nullptr ? *options.memory_plan : plan_memory(graph);
  schedule.fit = check_fit(schedule.memory, hw);

  // A group with an op the hardware cannot run does not fuse.
  FusionPlan& plan = schedule.fusion;
  std::erase_if(plan.groups, [&](const FusionGroup& group) {
    for (const std::size_t i : group.ops) {
      if (placed[i]) continue;
      plan.rejected.push_back({group.kind, group.ops,
                               fmt::format("'{}' cannot run on '{}'", graph.ops[i].name,
                                           hw.name())});
      return true;
    }
    return false;
  });
  std::vector<std::optional<std::size_t>> group_of(n);
  std::set<std::uint32_t> on_chip;  // tensor ids of fused intermediates, kept and cached tensors
  for (std::size_t g = 0; g < plan.groups.size(); ++g) {
    for (const std::size_t i : plan.groups[g].ops) group_of[i] = g;
    for (const workload::TensorId t : plan.groups[g].intermediates) on_chip.insert(t.value);
  }

  // Residency: which ops run, and which price tensors held on chip (systolic contractions,
  // vector and transfer ops take them off their DRAM traffic; attention and collectives do not).
  std::vector<OpTraits> traits(n);
  for (std::size_t i = 0; i < n; ++i) {
    traits[i].runs = placed[i].has_value();
    traits[i].prices_on_chip =
        placed[i] && (placed[i]->placement == Placement::Systolic ||
                      placed[i]->placement == Placement::TensorCore ||
                      placed[i]->placement == Placement::Vector ||
                      placed[i]->placement == Placement::Transfer);
  }
  schedule.residency =
      plan_residency(graph, hw, plan, traits, options.fusion == FusionMode::All);
  for (const KeptTensor& kept : schedule.residency.kept) on_chip.insert(kept.tensor.value);
  if (schedule.residency.weights)
    for (const workload::TensorId t : schedule.residency.weights->tensors) on_chip.insert(t.value);

  schedule.ops.reserve(n);
  for (std::size_t i = 0; i < n; ++i) {
    if (!placed[i]) continue;
    ScheduledOp& scheduled = *placed[i];
    scheduled.fusion_group = group_of[i];
    scheduled.own_kernel = !group_of[i] || plan.groups[*group_of[i]].ops.front() == i;
    if (auto* attention = std::get_if<AttentionWork>(&scheduled.work);
        attention && group_of[i] && plan.groups[*group_of[i]].kind == FusionKind::Attention) {
      attention->fused = true;
      attention->block = plan.groups[*group_of[i]].flash_block;
    }
    // The heads' merge in an attention group: the fused kernel writes O in the merged layout.
    if (group_of[i] && plan.groups[*group_of[i]].kind == FusionKind::Attention &&
        std::holds_alternative<TransferWork>(scheduled.work))
      scheduled.work = TransferWork{};
    if (!on_chip.empty()) keep_on_chip(graph.ops[i], on_chip, scheduled);
    schedule.ops.push_back(std::move(scheduled));
  }
  return schedule;
}

}  // namespace coda::mapper
