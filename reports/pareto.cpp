#include "reports/pareto.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>

#include "core/check.h"

namespace coda::reports {
namespace {

// Every objective as a quantity to minimise.
double cost(double value, Sense sense) { return sense == Sense::Minimise ? value : -value; }

bool dominates(const std::vector<double>& a, const std::vector<double>& b) {
  bool better = false;
  for (std::size_t k = 0; k < a.size(); ++k) {
    if (a[k] > b[k]) return false;
    better = better || a[k] < b[k];
  }
  return better;
}

}  // namespace

std::vector<std::size_t> pareto_front(std::span<const std::vector<double>> values,
                                      std::span<const Sense> senses) {
  CODA_CHECK(senses.size() >= 2);
  std::vector<std::vector<double>> costs(values.size());
  std::vector<std::size_t> order;
  for (std::size_t i = 0; i < values.size(); ++i) {
    CODA_CHECK(values[i].size() == senses.size());
    if (!std::all_of(values[i].begin(), values[i].end(),
                     [](double v) { return std::isfinite(v); }))
      continue;
    for (std::size_t k = 0; k < senses.size(); ++k)
      costs[i].push_back(cost(values[i][k], senses[k]));
    order.push_back(i);
  }
  std::stable_sort(order.begin(), order.end(),
                   [&](std::size_t a, std::size_t b) { return costs[a] < costs[b]; });
  std::vector<std::size_t> front;
  if (senses.size() == 2) {
    // In order of the first cost, then the second: a design is on the front when its second
    // cost is below every second cost seen at a strictly smaller first cost, and equal to the
    // smallest second cost among the designs sharing its first cost.
    double best_before = std::numeric_limits<double>::infinity();
    for (std::size_t start = 0; start < order.size();) {
      std::size_t end = start;
      while (end < order.size() && costs[order[end]][0] == costs[order[start]][0]) ++end;
      const double group_best = costs[order[start]][1];
      for (std::size_t i = start; i < end && costs[order[i]][1] == group_best; ++i)
        if (group_best < best_before) front.push_back(order[i]);
      best_before = std::min(best_before, group_best);
      start = end;
    }
  } else {
    // A dominated design is dominated by a front design that sorts before it (dominance is
    // transitive and a dominator is lexicographically smaller).
    for (const std::size_t i : order)
      if (std::none_of(front.begin(), front.end(),
                       [&](std::size_t f) { return dominates(costs[f], costs[i]); }))
        front.push_back(i);
  }
  std::sort(front.begin(), front.end());
  return front;
}

std::vector<ChosenDesign> choose_designs(std::span<const std::vector<double>> values,
                                         std::span<const std::size_t> front,
                                         std::span<const Sense> senses,
                                         std::span<const std::string> names) {
  CODA_CHECK(names.size() == senses.size());
  std::map<std::size_t, std::vector<std::string>> labels;
  if (front.empty()) return {};
  const std::size_t k_count = senses.size();
  std::vector<double> best(k_count), worst(k_count);
  for (std::size_t k = 0; k < k_count; ++k) {
    std::size_t best_index = front[0];
    best[k] = worst[k] = cost(values[front[0]][k], senses[k]);
    for (const std::size_t i : front) {
      const double c = cost(values[i][k], senses[k]);
      if (c < best[k] || (c == best[k] && i < best_index)) best_index = i;
      best[k] = std::min(best[k], c);
      worst[k] = std::max(worst[k], c);
    }
    labels[best_index].push_back("best " + names[k]);
  }
  std::size_t knee = front[0];
  double knee_distance = std::numeric_limits<double>::infinity();
  for (const std::size_t i : front) {
    double squares = 0;
    for (std::size_t k = 0; k < k_count; ++k) {
      const double span = worst[k] - best[k];
      const double scaled = span > 0 ? (cost(values[i][k], senses[k]) - best[k]) / span : 0.0;
      squares += scaled * scaled;
    }
    if (squares < knee_distance) {  // strict: ties keep the lower index
      knee_distance = squares;
      knee = i;
    }
  }
  labels[knee].emplace_back("knee");
  std::vector<ChosenDesign> out;
  out.reserve(labels.size());
  for (auto& [index, text] : labels) out.push_back({index, std::move(text)});
  return out;
}

}  // namespace coda::reports
