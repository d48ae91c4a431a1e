#include "mapper/tile_program.h"

#include <algorithm>

#include "core/check.h"

namespace coda::mapper {
namespace {

bool indexes(const ProblemTensor& tensor, std::size_t dim) {
  return ((static_cast<unsigned>(tensor.dim_mask) >> dim) & 1U) != 0;
}

// Calls visit(k, index of loop k) for every loop at `step`, innermost first.
template <class Visit>
void for_each_loop_index(const TileProgram& program, std::uint64_t step, Visit visit) {
  std::uint64_t rest = step;
  for (std::size_t k = program.loops.size(); k-- > 0;) {
    visit(k, rest % program.loops[k].count);
    rest /= program.loops[k].count;
  }
}

}  // namespace

TileProgram make_tile_program(const LoopNestProblem& problem, const Mapping& mapping,
                              const MappingCost& cost) {
  CODA_CHECK(cost.ok() && cost.level_count == mapping.level_count && mapping.level_count > 0);
  const std::size_t dram = mapping.level_count - 1U;
  TileProgram program;
  const LevelMapping& top = mapping.levels[dram];
  for (std::size_t k = 0; k < mapping.dim_count; ++k) {
    const std::uint8_t d = top.order[k];
    if (top.temporal[d] > 1) program.loops.push_back({d, top.temporal[d]});
  }
  for (const TileLoop& loop : program.loops) program.steps *= loop.count;

  double on_chip_cycles = cost.compute_cycles;
  for (std::size_t i = 0; i < dram; ++i)
    on_chip_cycles = std::max(on_chip_cycles, cost.levels[i].cycles);
  program.compute_cycles_per_step = on_chip_cycles / static_cast<double>(program.steps);

  const LevelCost& dram_cost = cost.levels[dram];
  for (std::size_t t = 0; t < problem.tensor_count; ++t) {
    const ProblemTensor& tensor = problem.tensors[t];
    TileStream stream;
    stream.tensor = static_cast<std::uint8_t>(t);
    stream.role = tensor.role;
    for (std::size_t k = 0; k < program.loops.size(); ++k)
      if (indexes(tensor, program.loops[k].dim)) {
        stream.depth = static_cast<int>(k);
        stream.indexed_loops |= 1U << k;
      }
    for (int k = 0; k <= stream.depth; ++k) {
      const TileLoop& loop = program.loops[static_cast<std::size_t>(k)];
      stream.events *= loop.count;
      if (indexes(tensor, loop.dim)) stream.visits *= loop.count;
    }
    const auto events = static_cast<double>(stream.events);
    const TensorTraffic& traffic = dram_cost.tensors[t];
    if (tensor.role == workload::TensorRole::Output) {
      stream.write_bytes_per_event = traffic.write_bytes / events;
      const std::uint64_t revisits = stream.events - stream.visits;
      if (revisits > 0) stream.read_back_bytes = traffic.read_bytes / static_cast<double>(revisits);
    } else {
      stream.read_bytes_per_event = traffic.read_bytes / events;
    }
    program.streams.push_back(stream);
  }
  return program;
}

TileProgram make_streaming_program(std::uint64_t steps, double compute_cycles, double read_bytes,
                                   double write_bytes) {
  CODA_CHECK(steps > 0);
  TileProgram program;
  if (steps > 1) program.loops.push_back({0, steps});
  program.steps = steps;
  program.compute_cycles_per_step = compute_cycles / static_cast<double>(steps);
  const int depth = steps > 1 ? 0 : -1;
  const std::uint32_t indexed = steps > 1 ? 1U : 0U;
  const double per_step = 1.0 / static_cast<double>(steps);
  if (read_bytes > 0)
    program.streams.push_back({.tensor = 0, .role = workload::TensorRole::Input, .depth = depth,
                               .indexed_loops = indexed, .events = steps, .visits = steps,
                               .read_bytes_per_event = read_bytes * per_step});
  if (write_bytes > 0)
    program.streams.push_back({.tensor = 1, .role = workload::TensorRole::Output, .depth = depth,
                               .indexed_loops = indexed, .events = steps, .visits = steps,
                               .write_bytes_per_event = write_bytes * per_step});
  return program;
}

StreamEvent event_at(const TileProgram& program, const TileStream& stream, std::uint64_t step) {
  StreamEvent event{true, false};
  for_each_loop_index(program, step, [&](std::size_t k, std::uint64_t index) {
    const bool within = static_cast<int>(k) <= stream.depth;
    // Loops inside depth must all be at 0 for the tile to change here.
    if (!within && index != 0) event.changes = false;
    // A loop within depth that does not index the tensor has moved off 0: a revisit.
    if (within && index != 0 && ((stream.indexed_loops >> k) & 1U) == 0)
      event.revisit = true;
  });
  if (!event.changes) event.revisit = false;
  return event;
}

std::uint64_t tile_at(const TileProgram& program, const TileStream& stream, std::uint64_t step) {
  std::uint64_t number = 0;
  std::uint64_t place = 1;  // innermost first, so the value builds from its low digits
  for_each_loop_index(program, step, [&](std::size_t k, std::uint64_t index) {
    if (static_cast<int>(k) > stream.depth || ((stream.indexed_loops >> k) & 1U) == 0)
      return;
    number += index * place;
    place *= program.loops[k].count;
  });
  return number;
}

}  // namespace coda::mapper
