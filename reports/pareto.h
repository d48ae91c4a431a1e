#pragma once
// Pareto fronts over two or more objectives, and the designs a report names on a front.

#include <cstddef>
#include <span>
#include <string>
#include <vector>

namespace coda::reports {

enum class Sense { Minimise, Maximise };

// The designs that no other design dominates, as indices into `values` in ascending order.
// `values[i]` holds design i's objective values, one per entry of `senses` (at least two). A
// design dominates another when it is no worse in every objective and strictly better in at
// least one; equal designs do not dominate each other, so duplicates on the front are all kept.
// A design with a non-finite value is left out. Two objectives: a sort and one sweep,
// O(n log n); more: designs in lexicographic order, each checked against the front so far,
// O(n log n + n f) for a front of f designs.
std::vector<std::size_t> pareto_front(std::span<const std::vector<double>> values,
                                      std::span<const Sense> senses);

// A design the report points out on a front, with why: "best latency_s", "knee".
struct ChosenDesign {
  std::size_t index = 0;            // into `values`
  std::vector<std::string> labels;  // in the order: best per objective, then knee
};

// On `front` (from pareto_front): the best design per objective (ties: the lowest index), and
// the knee: the front design nearest (Euclidean) to the ideal point after each objective is
// scaled to [0, 1] over the front, 0 its best value (an objective equal on the whole front
// scales to 0). A design chosen for several reasons appears once with all its labels; designs
// in ascending index order. `names` label the objectives.
std::vector<ChosenDesign> choose_designs(std::span<const std::vector<double>> values,
                                         std::span<const std::size_t> front,
                                         std::span<const Sense> senses,
                                         std::span<const std::string> names);

}  // namespace coda::reports
