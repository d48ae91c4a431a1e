#include "mapper/loop_nest_model.h"

#include <algorithm>
#include <cmath>

namespace coda::mapper {
namespace {

bool keeps(const Hierarchy& h, const LevelMapping& level, std::size_t i,
                     const ProblemTensor& tensor, std::size_t t) {
  if (i + 1 == h.levels.size()) return true;  // DRAM keeps everything
  return (h.levels[i].holds & tensor.role_bit) != 0 &&
         ((static_cast<unsigned>(level.bypass) >> t) & 1U) == 0;
}

MappingStatus fail(Infeasible reason, std::size_t level = 0, std::size_t dim = 0,
                   double needed = 0, double available = 0) {
  return {reason, static_cast<std::uint8_t>(level), static_cast<std::uint8_t>(dim), needed,
          available};
}

// Per-level tiles filled in by check(): full tiles for capacity, average ones for traffic. Left
// uninitialized on purpose (the hot path): check() writes every entry evaluate() reads, the
// average tile of each kept (level, tensor), the capacity used by each level and rho of each dim.
struct Tiles {
  std::array<std::array<double, kMaxTensors>, kMaxLevels> average_bytes;
  std::array<double, kMaxLevels> used_bytes;  // capacity used per instance
  std::array<double, kMaxDims> rho;           // extent / product of the dim's factors
};

// Shape, fan-out and capacity (and, when `coverage`, that every dim is covered). With `tiles`,
// also the average tiles (needs coverage, for rho).
MappingStatus check(const LoopNestProblem& p, const Mapping& m, const Hierarchy& h, bool coverage,
                    Tiles* tiles) {
  if (!p.status.ok()) return p.status;
  if (!h.unsupported.empty() || h.compute.macs_per_pe_per_cycle <= 0 || h.compute.pes == 0 ||
      h.levels.empty())
    return fail(Infeasible::Unsupported);
  const std::size_t n = h.levels.size();
  const std::size_t dims = p.dim_count;
  if (n > kMaxLevels) return fail(Infeasible::Limits);
  if (m.level_count != n) return fail(Infeasible::Shape, m.level_count);
  if (m.dim_count != dims) return fail(Infeasible::Shape, 0, m.dim_count);

  // Scratch arrays of the hot path are left uninitialized (no memset per call): every entry read
  // below is written first, for the mapping's dims and levels only.
  std::array<double, kMaxDims> product;
  for (std::size_t d = 0; d < dims; ++d) product[d] = 1;
  for (std::size_t i = 0; i < n; ++i) {
    const LevelMapping& level = m.levels[i];
    std::uint32_t seen = 0;
    double spread = 1;
    for (std::size_t k = 0; k < dims; ++k) {
      const std::size_t d = level.order[k];
      if (d >= dims || ((static_cast<unsigned>(seen) >> d) & 1U) != 0)
        return fail(Infeasible::Shape, i, k);
      seen |= 1u << d;
      if (level.temporal[k] == 0 || level.spatial[k] == 0) return fail(Infeasible::Shape, i, k);
      spread *= static_cast<double>(level.spatial[k]);
      product[k] *= static_cast<double>(level.temporal[k]) * static_cast<double>(level.spatial[k]);
    }
    if (spread > static_cast<double>(h.levels[i].fan_out) && !h.levels[i].waves)
      return fail(Infeasible::SpatialFanout, i, 0, spread,
                  static_cast<double>(h.levels[i].fan_out));
  }
  if (coverage) {
    for (std::size_t d = 0; d < dims; ++d) {
      const double extent = static_cast<double>(p.extents[d]);
      if (product[d] < extent) return fail(Infeasible::Coverage, 0, d, product[d], extent);
      if (tiles != nullptr) tiles->rho[d] = extent / product[d];
    }
  }

  std::array<double, kMaxDims> x;   // cumulative tile extent per dim
  std::array<double, kMaxDims> full;
  std::array<double, kMaxDims> average;
  for (std::size_t d = 0; d < dims; ++d) x[d] = 1;
  for (std::size_t i = 0; i < n; ++i) {
    const LevelMapping& level = m.levels[i];
    for (std::size_t d = 0; d < dims; ++d) {
      x[d] *= static_cast<double>(level.temporal[d]) * static_cast<double>(level.spatial[d]);
      full[d] = std::min(x[d], static_cast<double>(p.extents[d]));
      if (tiles != nullptr) average[d] = x[d] * tiles->rho[d];
    }
    const StorageLevel& storage = h.levels[i];
    double used = 0;
    for (std::size_t t = 0; t < p.tensor_count; ++t) {
      const ProblemTensor& tensor = p.tensors[t];
      if (!keeps(h, level, i, tensor, t)) continue;
      used += tile_elements(tensor, full) * tensor.bytes_per_element;
      if (tiles != nullptr)
        tiles->average_bytes[i][t] = tile_elements(tensor, average) * tensor.bytes_per_element;
    }
    if (storage.double_buffered) used *= 2;
    if (tiles != nullptr) tiles->used_bytes[i] = used;
    if (storage.capacity_bytes != 0 && used > static_cast<double>(storage.capacity_bytes))
      return fail(Infeasible::Capacity, i, 0, used, static_cast<double>(storage.capacity_bytes));
  }
  return {};
}

}  // namespace

LoopNestProblem compile_problem(const workload::Einsum& einsum) {
  LoopNestProblem p;
  if (einsum.dims.size() > kMaxDims || einsum.accesses.size() > kMaxTensors) {
    p.status = fail(Infeasible::Limits);
    return p;
  }
  p.dim_count = static_cast<std::uint8_t>(einsum.dims.size());
  p.tensor_count = static_cast<std::uint8_t>(einsum.accesses.size());
  p.points = 1;
  for (std::size_t d = 0; d < einsum.dims.size(); ++d) {
    p.extents[d] = einsum.dims[d].extent;
    p.points *= static_cast<double>(einsum.dims[d].extent);
    if (!workload::dim_indexes_role(einsum, d, workload::TensorRole::Output))
      p.reduction *= static_cast<double>(einsum.dims[d].extent);
    if (einsum.dims[d].extent == 0) p.status = fail(Infeasible::Shape, 0, d);
  }
  for (std::size_t t = 0; t < einsum.accesses.size(); ++t) {
    const workload::TensorAccess& access = einsum.accesses[t];
    ProblemTensor& tensor = p.tensors[t];
    tensor.role = access.role;
    tensor.role_bit = role_bit(access.role);
    tensor.bytes_per_element = static_cast<double>(bit_width(access.dtype)) / 8.0;
    if (access.indices.empty()) {
      p.status = fail(Infeasible::Unsupported);
      continue;
    }
    if (access.indices.size() > kMaxRanks) {
      p.status = fail(Infeasible::Limits);
      continue;
    }
    tensor.rank_count = static_cast<std::uint8_t>(access.indices.size());
    for (std::size_t r = 0; r < access.indices.size(); ++r) {
      ProblemRank& rank = tensor.ranks[r];
      rank.shape = r < access.shape.size() ? access.shape[r] : 0;
      for (const workload::IndexTerm& term : access.indices[r].terms) {
        if (term.coefficient == 0) continue;
        if (term.dim >= einsum.dims.size()) {
          p.status = fail(Infeasible::Shape, 0, term.dim);
          break;
        }
        if (rank.term_count == kMaxTerms) {
          p.status = fail(Infeasible::Limits);
          break;
        }
        rank.dim[rank.term_count] = static_cast<std::uint8_t>(term.dim);
        rank.coefficient[rank.term_count] =
            static_cast<std::uint64_t>(term.coefficient < 0 ? -term.coefficient : term.coefficient);
        ++rank.term_count;
        tensor.dim_mask = static_cast<std::uint16_t>(tensor.dim_mask | (1u << term.dim));
      }
    }
  }
  return p;
}

double tile_elements(const ProblemTensor& tensor, const std::array<double, kMaxDims>& extent) {
  double elements = 1;
  for (std::size_t r = 0; r < tensor.rank_count; ++r) {
    const ProblemRank& rank = tensor.ranks[r];
    double span = 1;
    if (rank.term_count == 1) {
      span = extent[rank.dim[0]];
    } else if (rank.term_count > 1) {
      double box = 1;
      double points = 1;
      for (std::size_t k = 0; k < rank.term_count; ++k) {
        const double x = extent[rank.dim[k]];
        box += static_cast<double>(rank.coefficient[k]) * std::max(x - 1, 0.0);
        points *= x;
      }
      span = std::min(box, points);
    }
    if (rank.shape != 0) span = std::min(span, static_cast<double>(rank.shape));
    elements *= span;
  }
  return elements;
}

MappingStatus check_resources(const LoopNestProblem& problem, const Mapping& mapping,
                              const Hierarchy& hierarchy) {
  return check(problem, mapping, hierarchy, false, nullptr);
}

MappingCost evaluate(const workload::Einsum& einsum, const Mapping& mapping,
                     const Hierarchy& hierarchy) {
  const LoopNestProblem problem = compile_problem(einsum);
  return evaluate(problem, mapping, hierarchy);
}

MappingCost evaluate(const LoopNestProblem& p, const Mapping& m, const Hierarchy& h) {
  MappingCost cost;
  Tiles tiles;
  cost.status = check(p, m, h, true, &tiles);
  if (!cost.status.ok()) return cost;

  const std::size_t n = h.levels.size();
  const std::size_t dims = p.dim_count;
  cost.level_count = static_cast<std::uint8_t>(n);
  cost.tensor_count = p.tensor_count;

  // Products of factors per level, and from the top down.
  std::array<double, kMaxLevels> spread;        // spatial product at level i
  std::array<double, kMaxLevels> steps;         // temporal product at level i
  std::array<double, kMaxLevels> used;          // instances of level i in use
  std::array<double, kMaxLevels> above;         // temporal product of levels above i
  for (std::size_t i = 0; i < n; ++i) {
    double s = 1;
    double t = 1;
    for (std::size_t d = 0; d < dims; ++d) {
      s *= static_cast<double>(m.levels[i].spatial[d]);
      t *= static_cast<double>(m.levels[i].temporal[d]);
    }
    spread[i] = s;
    steps[i] = t;
  }
  used[n - 1] = 1;
  above[n - 1] = 1;
  for (std::size_t i = n - 1; i-- > 0;) {
    used[i] = used[i + 1] * spread[i + 1];
    above[i] = above[i + 1] * steps[i + 1];
  }
  const double used_pes = used[0] * spread[0];
  const double iterations = above[0] * steps[0];
  cost.macs = p.points;
  cost.padded_macs = iterations * used_pes;
  cost.used_pes = static_cast<std::uint64_t>(used_pes);
  // A level that deals its spread out in waves (a GPU's grid over its SMs) runs ceil(spread /
  // fan-out) rounds of it: every instance below it is then a virtual one (a thread block), and
  // each physical instance works through `rounds` of them one after another. The level's own
  // temporal loops run inside each virtual instance; the loops above it, around the rounds.
  double rounds = 1;
  std::size_t waved = n;  // levels below this one are counted per virtual instance
  for (std::size_t i = 0; i < n; ++i) {
    const double fan_out = static_cast<double>(h.levels[i].fan_out);
    if (h.levels[i].waves && spread[i] > fan_out) {
      rounds = std::ceil(spread[i] / fan_out);
      waved = i;
    }
  }
  cost.rounds = rounds;

  std::array<double, kMaxTensors> pe_loads{};  // loads of each tensor's level-0 tile
  for (std::size_t t = 0; t < p.tensor_count; ++t) {
    const ProblemTensor& tensor = p.tensors[t];
    const std::uint32_t mask = tensor.dim_mask;

    // fills[i]: loads of level i's tile per instance; visits[i]: distinct tiles per instance.
    std::array<double, kMaxLevels> fills;
    std::array<double, kMaxLevels> visits;
    fills[n - 1] = 1;
    visits[n - 1] = 1;
    double relevant = 1;  // temporal product of the current level over dims indexing t
    for (std::size_t i = n; i-- > 0;) {
      const LevelMapping& level = m.levels[i];
      double from_relevant = 1;
      bool found = false;
      relevant = 1;
      for (std::size_t k = dims; k-- > 0;) {
        const std::size_t d = level.order[k];
        const double f = static_cast<double>(level.temporal[d]);
        if (level.temporal[d] <= 1) continue;
        const bool indexes = ((static_cast<unsigned>(mask) >> d) & 1U) != 0;
        if (indexes) relevant *= f;
        if (!found && !indexes) continue;  // the tile stays while this loop turns
        found = true;
        from_relevant *= f;
      }
      if (i == 0) break;
      // Below a level that runs in waves, a virtual instance's tiles do not outlast the loops
      // above that level: between two of their iterations the physical instance has run the
      // other rounds. Its own loops run inside each virtual instance (a block loops over its
      // K), so they still keep a tile in place.
      if (i == waved)
        fills[i - 1] = from_relevant * above[i];
      else
        fills[i - 1] = found ? from_relevant * above[i] : fills[i];
      visits[i - 1] = visits[i] * relevant;
    }
    pe_loads[t] = fills[0];
    const double pe_visits = visits[0] * relevant;  // relevant == level 0's here
    double rho_indexed = 1;
    for (std::size_t d = 0; d < dims; ++d)
      if (((static_cast<unsigned>(mask) >> d) & 1U) != 0) rho_indexed *= tiles.rho[d];

    // Walk the levels that keep t, from the PE array up.
    std::size_t parent_from = 0;  // first level whose spatial factors lie between child and parent
    bool from_pes = true;
    std::size_t child = 0;
    for (std::size_t i = 0; i < n; ++i) {
      if (!keeps(h, m.levels[i], i, tensor, t)) continue;
      // share: children that need the same tile (they differ only along dims that do not index
      // it); multicast: those of them one read (or one summed write) serves.
      double share = 1;
      double multicast = 1;
      for (std::size_t j = parent_from; j <= i; ++j)
        for (std::size_t d = 0; d < dims; ++d)
          if (((static_cast<unsigned>(mask) >> d) & 1U) == 0) {
            share *= static_cast<double>(m.levels[j].spatial[d]);
            if (h.levels[j].multicast) multicast *= static_cast<double>(m.levels[j].spatial[d]);
          }
      double moved = 0;
      double first = 0;
      if (from_pes) {
        moved = p.points * tensor.bytes_per_element;
        first = pe_visits * used_pes * rho_indexed * tensor.bytes_per_element;
      } else {
        const double tile = tiles.average_bytes[child][t];
        moved = fills[child] * tile * used[child];
        first = visits[child] * tile * used[child];
      }
      TensorTraffic& up = cost.levels[i].tensors[t];
      if (tensor.role != workload::TensorRole::Output) {
        if (!from_pes) cost.levels[child].tensors[t].write_bytes += moved;
        up.read_bytes += moved / multicast;
      } else {
        // Every write that is not a tile's first arrival at p adds to partial sums p holds: p
        // reads them back (and, for a revisit of the child's tile, the child reloads them). The
        // first arrivals are the distinct tiles, first / share; without a multicast network the
        // children sharing a tile each write their own partial sums.
        const double read_back = std::max(moved / multicast - first / share, 0.0);
        if (!from_pes) {
          cost.levels[child].tensors[t].read_bytes += moved;
          cost.levels[child].tensors[t].write_bytes += std::max(moved - first, 0.0) / share;
        }
        up.write_bytes += moved / multicast;
        up.read_bytes += read_back;
      }
      from_pes = false;
      child = i;
      parent_from = i + 1;
    }
  }

  cost.compute_cycles = iterations * rounds / h.compute.macs_per_pe_per_cycle;
  // Each output tile's thread block pays block_overhead_k more reduction elements for its
  // prologue and epilogue over its whole reduction, as the closed form charges a block: the
  // arithmetic grows by block_overhead_k / reduction. A mapping that splits the reduction over
  // blocks or passes is not charged again for each split (nor for summing the splits' partial
  // sums in a kernel of their own): the closed form, which this model is held to, has no split-K.
  if (h.block_overhead_k > 0) cost.compute_cycles *= 1.0 + h.block_overhead_k / p.reduction;
  if (h.compute.array_rows > 0 && h.compute.array_cols > 0) {
    // Systolic pipeline: every pass (one iteration of the loops above the PEs) fills and drains
    // the array, R + C - 2 cycles of operand skew, plus R to preload a stationary operand
    // unless the PEs' own loops keep the output still (output stationary).
    // A pass lasts while the PE registers' stationary tile stays: the passes are the fewest
    // loads of any tensor's PE tile.
    double passes = above[0];
    double output_loads = above[0];
    for (std::size_t t = 0; t < p.tensor_count; ++t) {
      passes = std::min(passes, pe_loads[t]);
      if (p.tensors[t].role == workload::TensorRole::Output)
        output_loads = std::min(output_loads, pe_loads[t]);
    }
    const bool output_stationary = output_loads <= passes;
    const double rows = h.compute.array_rows;
    double preload = output_stationary ? 0.0 : rows;
    if (!output_stationary && h.compute.overlapped_preload) {
      // The next tile loads while a pass streams (mapper::fold_cycles): a pass exposes only what
      // the load exceeds its stream by, and the first load shows once.
      const double stream = cost.compute_cycles / passes;
      preload = std::max(0.0, rows - stream);
      cost.compute_cycles += rows;
    }
    cost.compute_cycles += passes * (rows + h.compute.array_cols - 2 + preload);
  }
  cost.cycles = cost.compute_cycles;
  cost.mac_energy_pj = p.points * h.compute.mac_energy_pj;
  cost.energy_pj = cost.mac_energy_pj;
  for (std::size_t i = 0; i < n; ++i) {
    LevelCost& level = cost.levels[i];
    const StorageLevel& storage = h.levels[i];
    for (std::size_t t = 0; t < p.tensor_count; ++t) {
      level.read_bytes += level.tensors[t].read_bytes;
      level.write_bytes += level.tensors[t].write_bytes;
      if (keeps(h, m.levels[i], i, p.tensors[t], t))
        level.kept = static_cast<std::uint8_t>(level.kept | (1u << t));
    }
    level.tile_bytes = tiles.used_bytes[i];
    level.used_instances = static_cast<std::uint64_t>(used[i]);
    // Below a level that runs in waves each physical instance serves `rounds` virtual ones.
    const double busy = i < waved ? used[i] / rounds : used[i];
    const double read_cycles = storage.read_bytes_per_cycle > 0
                                   ? level.read_bytes / (storage.read_bytes_per_cycle * busy)
                                   : 0.0;
    const double write_cycles = storage.write_bytes_per_cycle > 0
                                    ? level.write_bytes / (storage.write_bytes_per_cycle * busy)
                                    : 0.0;
    level.cycles = storage.shared_port ? read_cycles + write_cycles
                                       : std::max(read_cycles, write_cycles);
    level.energy_pj = (level.read_bytes + level.write_bytes) * storage.energy_pj_per_byte;
    cost.energy_pj += level.energy_pj;
    if (level.cycles > cost.cycles) {
      cost.cycles = level.cycles;
      cost.bottleneck = static_cast<std::uint8_t>(i);
    }
  }
  cost.edp = cost.energy_pj * cost.cycles;
  const double pes = static_cast<double>(h.compute.pes);
  cost.spatial_utilization = used_pes / (rounds * pes);
  cost.utilization =
      cost.cycles > 0 ? p.points / (cost.cycles * pes * h.compute.macs_per_pe_per_cycle) : 0.0;
  return cost;
}

}  // namespace coda::mapper
