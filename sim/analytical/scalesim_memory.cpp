#include "sim/analytical/scalesim_memory.h"

#include <algorithm>
#include <cmath>
#include <optional>
#include <vector>

#include "core/check.h"
#include "workloads/op.h"

namespace coda::sim::analytical {
namespace {

using arch::Dataflow;

constexpr std::int64_t kNone = -1;  // SCALE-Sim's null request

std::uint64_t ceil_div(std::uint64_t a, std::uint64_t b) { return (a + b - 1) / b; }

// Visits an Mp x Np matrix along its anti-diagonals, each from its bottom row up: the order
// SCALE-Sim's create_*_prefetch_mat rolls a skewed operand out in ("ISSUE #15, #16").
template <class Visit>
void for_each_by_diagonal(std::uint64_t mp, std::uint64_t np, Visit&& visit) {
  for (std::uint64_t d = 0; d + 1 < mp + np; ++d) {
    const std::uint64_t max_row = std::min(d, mp - 1);
    const std::uint64_t min_row = d + 1 > np ? d + 1 - np : 0;
    for (std::uint64_t row = max_row + 1; row-- > min_row;) visit(row, d - row);
  }
}

template <class Visit>
void for_each_row_major(std::uint64_t mp, std::uint64_t np, Visit&& visit) {
  for (std::uint64_t row = 0; row < mp; ++row)
    for (std::uint64_t col = 0; col < np; ++col) visit(row, col);
}

// read_buffer.py with its read_port (1 cycle latency), layout evaluation off.
class ReadBuffer {
 public:
  // `for_each_fetch(visit)` visits the operand's elements in the order SCALE-Sim prefetches them
  // (null requests left out: they fill no set); it is walked twice, to size and to fill.
  // `elements`: one more than the largest element id.
  template <class ForEachFetch>
  ReadBuffer(std::uint64_t capacity_words, std::uint64_t bandwidth_words,
             const ForEachFetch& for_each_fetch, std::uint64_t elements) {
    const std::uint64_t active = ceil_div(capacity_words, 2);  // active_buf_frac 0.5
    const std::uint64_t prefetch = capacity_words - active;
    const std::uint64_t per_set = ceil_div(capacity_words, 100);  // prepare_hashed_buffer
    // new_prefetch: ceil(prefetch / bw) request lines, one a cycle from the cycle after the last
    // prefetch completed, each answered a cycle later.
    prefetch_cycles_ = static_cast<std::int64_t>(ceil_div(prefetch, bandwidth_words)) + 1;

    // Which sets hold each element (several when the operand repeats an element), as CSR.
    first_.assign(elements + 1, 0);
    std::uint64_t fetched = 0;
    for_each_fetch([&](std::int64_t id) {
      ++first_[static_cast<std::uint64_t>(id) + 1];
      ++fetched;
    });
    for (std::uint64_t i = 0; i < elements; ++i) first_[i + 1] += first_[i];
    sets_of_.resize(fetched);
    std::vector<std::uint64_t> fill(first_.begin(), first_.end() - 1);
    std::uint64_t v = 0;
    for_each_fetch([&](std::int64_t id) {
      sets_of_[fill[static_cast<std::uint64_t>(id)]++] = static_cast<std::uint32_t>(v++ / per_set);
    });

    sets_ = fetched / per_set + 1;  // the last set may be partial, even empty
    active_sets_ = std::min(sets_, ceil_div(active, per_set));
    prefetch_sets_ = std::min(sets_ - active_sets_, ceil_div(prefetch, per_set));
    end_ = active_sets_;
  }

  // service_reads for one demand row issued at `cycle`: the cycles the row waits beyond the hit
  // latency (negative when a prefetch it waited on had completed early).
  std::int64_t service(std::span<const std::int64_t> row, std::int64_t cycle) {
    std::int64_t offset = 1;  // hit latency
    for (const std::int64_t id : row) {
      if (id == kNone) continue;
      while (!hit(static_cast<std::uint64_t>(id))) {
        CODA_CHECK(prefetch_sets_ > 0);  // every set is active, so every element hits
        start_ = (start_ + prefetch_sets_) % sets_;
        end_ = (start_ + active_sets_) % sets_;
        last_prefetch_ += prefetch_cycles_;
        const std::int64_t wait = last_prefetch_ - (cycle + offset);
        offset += wait;              // SCALE-Sim adds the wait, early or late,
        if (wait > 0) offset += wait;  // and a late one a second time
      }
    }
    return offset - 1;
  }

 private:
  bool hit(std::uint64_t id) const {
    for (std::uint64_t i = first_[id]; i < first_[id + 1]; ++i) {
      const std::uint64_t set = sets_of_[i];
      if (start_ < end_ ? set >= start_ && set < end_ : set >= start_ || set < end_) return true;
    }
    return false;
  }

  std::uint64_t sets_ = 1, active_sets_ = 1, prefetch_sets_ = 0;
  std::int64_t prefetch_cycles_ = 1;
  std::vector<std::uint64_t> first_;     // CSR over element ids into sets_of_
  std::vector<std::uint32_t> sets_of_;
  std::uint64_t start_ = 0, end_ = 1;    // the active window of sets, circular
  // prefetch_active_buffer fills the active half before the first row (cycle 0): its last line
  // arrives at cycle -1.
  std::int64_t last_prefetch_ = -1;
};

// write_buffer.py with its write_port (no latency). Only how many elements a row writes matters.
class WriteBuffer {
 public:
  WriteBuffer(std::uint64_t capacity_words, std::uint64_t bandwidth_words)
      : total_(static_cast<std::int64_t>(capacity_words)),
        active_(static_cast<std::int64_t>(ceil_div(capacity_words, 2))),
        bandwidth_(bandwidth_words),
        drain_lines_(ceil_div(capacity_words - ceil_div(capacity_words, 2), bandwidth_words)),
        free_(total_) {}

  // service_writes for one row of `count` elements at `cycle`: the cycles the row waits.
  std::int64_t service(std::uint64_t count, std::int64_t cycle) {
    std::int64_t current = cycle;
    for (std::uint64_t e = 0; e < count; ++e) {
      --free_;  // store_to_trace_mat_cache
      if (++line_fill_ == bandwidth_) {
        lines_.push_back(line_fill_);
        line_fill_ = 0;
      }
      if (current < drain_end_) {
        if (free_ <= 0) current = drain_end_;
      } else if (free_ < active_) {
        if (line_fill_ > 0) lines_.push_back(line_fill_);  // append_to_trace_mat(force=True)
        line_fill_ = 0;
        drain_end_ = drain(current);
      }
    }
    return current - cycle;
  }

 private:
  // empty_drain_buf: the next drain_lines_ lines, one a cycle from `start`. SCALE-Sim frees a
  // whole line for each but the last, whose null slots it subtracts.
  std::int64_t drain(std::int64_t start) {
    const std::uint64_t end = std::min<std::uint64_t>(drained_ + drain_lines_, lines_.size());
    const std::uint64_t lines = end - drained_;
    if (lines == 0) return start;
    free_ += static_cast<std::int64_t>(lines * bandwidth_ - (bandwidth_ - lines_[end - 1]));
    drained_ = end;
    return start + static_cast<std::int64_t>(lines) - 1;
  }

  std::int64_t total_, active_;
  std::uint64_t bandwidth_, drain_lines_;
  std::int64_t free_;
  std::vector<std::uint64_t> lines_;  // elements in each line handed to the drain, in order
  std::uint64_t line_fill_ = 0;       // the line being filled
  std::uint64_t drained_ = 0;         // lines drained so far
  std::int64_t drain_end_ = 0;
};

// The simulation, for any `ifmap(m, k)` -> element id (kNone: no element) below
// `ifmap_elements`.
template <class IfmapId>
ScaleSimCycles simulate(const ScaleSimMemorySpec& spec, const ScaleSimGemm& gemm,
                        const IfmapId& ifmap, std::uint64_t ifmap_elements) {
  const std::uint64_t R = spec.rows, C = spec.cols, M = gemm.m, N = gemm.n, K = gemm.k;
  CODA_CHECK(R > 0 && C > 0 && M > 0 && N > 0 && K > 0 && spec.bandwidth_words > 0);
  CODA_CHECK(spec.ifmap_words > 0 && spec.filter_words > 0 && spec.ofmap_words > 0);
  const auto filter = [&](std::uint64_t k, std::uint64_t n) {
    return static_cast<std::int64_t>(k * N + n);
  };

  // The three operand matrices' roles on the array (SCALE-Sim's Sr, Sc, T).
  const Dataflow df = spec.dataflow;
  const std::uint64_t sr = df == Dataflow::OutputStationary ? M : K;
  const std::uint64_t sc = df == Dataflow::InputStationary ? M : N;
  const std::uint64_t t = df == Dataflow::OutputStationary ? K
                          : df == Dataflow::WeightStationary ? M
                                                             : N;
  const std::uint64_t row_folds = ceil_div(sr, R), col_folds = ceil_div(sc, C);

  // Fetch orders (systolic_compute_{os,ws,is}.py, create_*_prefetch_mat): the folds' tiles
  // stacked, then rolled out by anti-diagonal, except the stationary operand of WS and IS.
  const auto ifmap_fetches = [&](const auto& visit) {
    const auto valid = [&](std::int64_t id) {
      if (id != kNone) visit(id);
    };
    switch (df) {
      case Dataflow::OutputStationary:
        for_each_by_diagonal(row_folds * t, R, [&](std::uint64_t row, std::uint64_t c) {
          const std::uint64_t m = row / t * R + c;
          if (m < M) valid(ifmap(m, row % t));
        });
        break;
      case Dataflow::WeightStationary:
        for_each_by_diagonal(row_folds * t, R, [&](std::uint64_t row, std::uint64_t c) {
          const std::uint64_t k = row / t * R + c;
          if (k < K) valid(ifmap(row % t, k));
        });
        break;
      case Dataflow::InputStationary:
        for_each_row_major(col_folds * K, C, [&](std::uint64_t row, std::uint64_t c) {
          const std::uint64_t m = row / K * C + c;
          if (m < M) valid(ifmap(m, row % K));
        });
        break;
    }
  };
  const auto filter_fetches = [&](const auto& visit) {
    switch (df) {
      case Dataflow::OutputStationary:
        for_each_by_diagonal(col_folds * t, C, [&](std::uint64_t row, std::uint64_t c) {
          const std::uint64_t n = row / t * C + c;
          if (n < N) visit(filter(row % t, n));
        });
        break;
      case Dataflow::WeightStationary:
        for_each_row_major(col_folds * K, C, [&](std::uint64_t row, std::uint64_t c) {
          const std::uint64_t n = row / K * C + c;
          if (n < N) visit(filter(row % K, n));
        });
        break;
      case Dataflow::InputStationary:
        for_each_by_diagonal(row_folds * t, R, [&](std::uint64_t row, std::uint64_t c) {
          const std::uint64_t k = row / t * R + c;
          if (k < K) visit(filter(k, row % t));
        });
        break;
    }
  };
  ReadBuffer ifmap_buffer(spec.ifmap_words, spec.bandwidth_words, ifmap_fetches, ifmap_elements);
  ReadBuffer filter_buffer(spec.filter_words, spec.bandwidth_words, filter_fetches, K * N);
  WriteBuffer ofmap_buffer(spec.ofmap_words, spec.bandwidth_words);

  // Demand rows (create_*_demand_mat): per fold, column folds outer, each row one cycle.
  const bool os = df == Dataflow::OutputStationary;
  const std::uint64_t fold_rows = os ? t + R + C - 2 : t + 2 * R + C - 2;
  const std::uint64_t ifmap_width = df == Dataflow::InputStationary ? C : R;
  const std::uint64_t filter_width = df == Dataflow::InputStationary ? R : C;
  std::vector<std::int64_t> ifmap_row(ifmap_width), filter_row(filter_width);
  // Index into a skewed stream: column c sees step r - c - lead, when that is in [0, length).
  const auto step = [](std::uint64_t r, std::uint64_t c, std::uint64_t lead,
                       std::uint64_t length) -> std::optional<std::uint64_t> {
    if (r < c + lead || r - c - lead >= length) return std::nullopt;
    return r - c - lead;
  };

  ScaleSimCycles out;
  std::int64_t stalls = 0, index = 0, last_write = 0;
  for (std::uint64_t fc = 0; fc < col_folds; ++fc) {
    for (std::uint64_t fr = 0; fr < row_folds; ++fr) {
      for (std::uint64_t r = 0; r < fold_rows; ++r) {
        std::uint64_t writes = 0;
        switch (df) {
          case Dataflow::OutputStationary:
            for (std::uint64_t c = 0; c < R; ++c) {
              const auto k = step(r, c, 0, t);
              const std::uint64_t m = fr * R + c;
              ifmap_row[c] = k && m < M ? ifmap(m, *k) : kNone;
            }
            for (std::uint64_t c = 0; c < C; ++c) {
              const auto k = step(r, c, 0, t);
              const std::uint64_t n = fc * C + c;
              filter_row[c] = k && n < N ? filter(*k, n) : kNone;
              // Outputs leave bottom row first, T - 1 cycles after the fold starts.
              const auto j = step(r, c, t - 1, R);
              if (j && fr * R + (R - 1 - *j) < M && n < N) ++writes;
            }
            break;
          case Dataflow::WeightStationary:
            for (std::uint64_t c = 0; c < R; ++c) {
              const auto m = step(r, c, R, t);  // after R rows of weight loading
              const std::uint64_t k = fr * R + c;
              ifmap_row[c] = m && k < K ? ifmap(*m, k) : kNone;
            }
            for (std::uint64_t c = 0; c < C; ++c) {
              const std::uint64_t n = fc * C + c;
              const bool loading = r < R && fr * R + (R - 1 - r) < K && n < N;
              filter_row[c] = loading ? filter(fr * R + (R - 1 - r), n) : kNone;
              if (step(r, c, 2 * R - 1, t) && n < N) ++writes;
            }
            break;
          case Dataflow::InputStationary:
            for (std::uint64_t c = 0; c < C; ++c) {
              const std::uint64_t m = fc * C + c;
              const bool loading = r < R && fr * R + (R - 1 - r) < K && m < M;
              ifmap_row[c] = loading ? ifmap(m, fr * R + (R - 1 - r)) : kNone;
              if (step(r, c, 2 * R - 1, t) && m < M) ++writes;
            }
            for (std::uint64_t c = 0; c < R; ++c) {
              const auto n = step(r, c, R, t);
              const std::uint64_t k = fr * R + c;
              filter_row[c] = n && k < K ? filter(k, *n) : kNone;
            }
            break;
        }
        const std::int64_t cycle = index + stalls;
        const std::int64_t ifmap_wait = ifmap_buffer.service(ifmap_row, cycle);
        const std::int64_t filter_wait = filter_buffer.service(filter_row, cycle);
        const std::int64_t ofmap_wait = ofmap_buffer.service(writes, cycle);
        stalls += std::max({ifmap_wait, filter_wait, ofmap_wait});
        last_write = cycle + ofmap_wait;
        ++index;
      }
    }
  }
  out.demand_rows = static_cast<std::uint64_t>(index);
  out.total_cycles = static_cast<std::uint64_t>(last_write);
  out.stall_cycles = static_cast<std::uint64_t>(stalls);
  return out;
}

}  // namespace

ScaleSimCycles simulate_scalesim_memory(const ScaleSimMemorySpec& spec, const ScaleSimGemm& gemm,
                                        std::span<const std::int64_t> ifmap_ids) {
  CODA_CHECK(ifmap_ids.empty() || ifmap_ids.size() == gemm.m * gemm.k);
  if (ifmap_ids.empty())
    return simulate(
        spec, gemm,
        [k = gemm.k](std::uint64_t m, std::uint64_t kk) {
          return static_cast<std::int64_t>(m * k + kk);
        },
        gemm.m * gemm.k);
  const std::int64_t largest = *std::max_element(ifmap_ids.begin(), ifmap_ids.end());
  return simulate(
      spec, gemm,
      [&ifmap_ids, k = gemm.k](std::uint64_t m, std::uint64_t kk) { return ifmap_ids[m * k + kk]; },
      static_cast<std::uint64_t>(std::max<std::int64_t>(largest + 1, 0)));
}

ScaleSimCycles simulate_scalesim_op(const mapper::SystolicMapping& mapping,
                                    const arch::HardwareModel& hw) {
  using workload::TensorRole;
  CODA_CHECK(mapping.gemm.batch == 1 && mapping.packed == 1 && mapping.arrays == 1);
  const std::uint64_t word = hw.spec().word_size.value_or(Bytes{1}).value;
  const auto words = [&](arch::Operand operand) {
    const arch::MemoryLevelSpec* level = hw.operand_level(operand);
    CODA_CHECK(level != nullptr);
    return level->capacity.value / word;
  };
  const std::optional<double> bytes_per_cycle = hw.dram_bytes_per_cycle();
  CODA_CHECK(bytes_per_cycle.has_value());  // the arch loader requires it with model: scalesim
  const ScaleSimMemorySpec spec{
      .rows = hw.rows(), .cols = hw.cols(), .dataflow = mapping.dataflow,
      .ifmap_words = words(arch::Operand::Ifmap), .filter_words = words(arch::Operand::Filter),
      .ofmap_words = words(arch::Operand::Ofmap),
      .bandwidth_words = static_cast<std::uint64_t>(
          std::llround(*bytes_per_cycle / static_cast<double>(word)))};
  const ScaleSimGemm gemm{.m = mapping.gemm.m, .n = mapping.gemm.n, .k = mapping.gemm.k};

  // Where each dim's value sits in a GEMM row (M) or column (K) index, as workload::gemm_view
  // classifies the dims: its stride in that index and its extent.
  const workload::Einsum& space = mapping.space;
  const auto input = std::find_if(space.accesses.begin(), space.accesses.end(),
                                  [](const auto& a) { return a.role == TensorRole::Input; });
  CODA_CHECK(input != space.accesses.end());
  enum class Axis : std::uint8_t { None, M, K };
  struct Place {
    Axis axis = Axis::None;
    std::uint64_t stride = 1, extent = 1;
  };
  std::vector<Place> places(space.dims.size());
  std::vector<std::size_t> m_dims, k_sliding, k_rest;
  for (std::size_t d = 0; d < space.dims.size(); ++d) {
    const bool out = workload::dim_indexes_role(space, d, TensorRole::Output);
    const bool in = workload::dim_indexes_role(space, d, TensorRole::Input);
    const bool weight = workload::dim_indexes_role(space, d, TensorRole::Weight);
    places[d].extent = space.dims[d].extent;
    if (out && in && !weight) {
      m_dims.push_back(d);
    } else if (!out) {
      // A K dim that shares an input index with an M dim slides the window (a filter row or
      // column); SCALE-Sim puts those outermost and the channel innermost.
      const auto slides_in = [&](const workload::IndexExpr& e) {
        const auto uses = [&](auto pred) {
          return std::any_of(e.terms.begin(), e.terms.end(), [&](const auto& t) {
            return t.coefficient != 0 && pred(t.dim);
          });
        };
        return uses([&](std::size_t x) { return x == d; }) &&
               uses([&](std::size_t x) {
                 return workload::dim_indexes_role(space, x, TensorRole::Output) &&
                        !workload::dim_indexes_role(space, x, TensorRole::Weight);
               });
      };
      const bool slides = std::any_of(input->indices.begin(), input->indices.end(), slides_in);
      (slides ? k_sliding : k_rest).push_back(d);
    } else if (!(weight && !in)) {  // N dims need no place: filter elements are k * N + n
      CODA_CHECK(places[d].extent == 1);  // a group or batch dim, and mapping.gemm.batch == 1
    }
  }
  std::vector<std::size_t> k_dims = k_sliding;
  k_dims.insert(k_dims.end(), k_rest.begin(), k_rest.end());
  const auto lay_out = [&](const std::vector<std::size_t>& dims, Axis axis) {
    std::uint64_t stride = 1;
    for (std::size_t i = dims.size(); i-- > 0;) {  // the last dim fastest
      const std::size_t d = dims[i];
      places[d].axis = axis;
      places[d].stride = stride;
      stride *= places[d].extent;
    }
    return stride;
  };
  CODA_CHECK(lay_out(m_dims, Axis::M) == gemm.m && lay_out(k_dims, Axis::K) == gemm.k);

  // A plain input (each index one dim, coefficient 1, no offset, no dim twice) is one element
  // per (m, k), as in a GEMM: any one-to-one numbering gives SCALE-Sim's sets.
  std::vector<bool> seen(space.dims.size(), false);
  bool plain = true;
  for (const workload::IndexExpr& e : input->indices) {
    plain = plain && e.offset == 0 && e.terms.size() == 1 && e.terms[0].coefficient == 1 &&
            !seen[e.terms[0].dim];
    if (e.terms.size() == 1) seen[e.terms[0].dim] = true;
  }
  if (plain) return simulate_scalesim_memory(spec, gemm);

  std::uint64_t elements = 1;
  for (const std::uint64_t extent : input->shape) elements *= extent;
  const auto ifmap = [&](std::uint64_t m, std::uint64_t k) -> std::int64_t {
    std::int64_t flat = 0;
    for (std::size_t i = 0; i < input->indices.size(); ++i) {
      const workload::IndexExpr& e = input->indices[i];
      std::int64_t value = e.offset;
      for (const workload::IndexTerm& term : e.terms) {
        const Place& p = places[term.dim];
        const std::uint64_t x = p.axis == Axis::M ? m : p.axis == Axis::K ? k : 0;
        value += term.coefficient * static_cast<std::int64_t>(x / p.stride % p.extent);
      }
      const auto extent = static_cast<std::int64_t>(input->shape[i]);
      if (value < 0 || value >= extent) return kNone;  // past the edge (or padding): no element
      flat = flat * extent + value;
    }
    return flat;
  };
  return simulate(spec, gemm, ifmap, elements);
}

}  // namespace coda::sim::analytical
