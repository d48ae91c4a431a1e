#include "reports/pareto.h"

#include <random>

#include <gtest/gtest.h>

namespace coda::reports {
namespace {

constexpr Sense kMin = Sense::Minimise;
constexpr Sense kMax = Sense::Maximise;

// The definition, pairwise: what the fast front must equal.
std::vector<std::size_t> brute_force(const std::vector<std::vector<double>>& v,
                                     const std::vector<Sense>& senses) {
  std::vector<std::size_t> front;
  for (std::size_t i = 0; i < v.size(); ++i) {
    bool dominated = false;
    for (std::size_t j = 0; j < v.size() && !dominated; ++j) {
      bool no_worse = true, better = false;
      for (std::size_t k = 0; k < senses.size(); ++k) {
        const double a = senses[k] == kMin ? v[j][k] : -v[j][k];
        const double b = senses[k] == kMin ? v[i][k] : -v[i][k];
        no_worse = no_worse && a <= b;
        better = better || a < b;
      }
      dominated = no_worse && better;
    }
    if (!dominated) front.push_back(i);
  }
  return front;
}

TEST(Pareto, TwoObjectivesKeepsDuplicatesAndDropsTies) {
  // (latency, energy), both minimised:
  //   0 A (1,5)  front: nothing has latency < 1
  //   1 B (2,3)  front
  //   2 C (3,4)  dominated by B (2 <= 3, 3 <= 4)
  //   3 D (4,1)  front: lowest energy
  //   4 E (2,3)  front: equal to B, and equal designs do not dominate each other
  //   5 F (1,6)  dominated by A (same latency, more energy)
  //   6 G (5,1)  dominated by D (same energy, more latency)
  const std::vector<std::vector<double>> v = {{1, 5}, {2, 3}, {3, 4}, {4, 1},
                                              {2, 3}, {1, 6}, {5, 1}};
  EXPECT_EQ(pareto_front(v, std::vector{kMin, kMin}), (std::vector<std::size_t>{0, 1, 3, 4}));
}

TEST(Pareto, MaximisedObjectiveFlipsTheOrder) {
  // (throughput: max, energy: min): 2 (9,6) is dominated by 0 (10 >= 9, 5 <= 6); 3 (8,4) by
  // 1 (8,3); 0 and 1 trade throughput for energy.
  const std::vector<std::vector<double>> v = {{10, 5}, {8, 3}, {9, 6}, {8, 4}};
  EXPECT_EQ(pareto_front(v, std::vector{kMax, kMin}), (std::vector<std::size_t>{0, 1}));
}

TEST(Pareto, ThreeObjectives) {
  // 2 (2,2,5) is dominated by 0 (1,1,5); 3 (0,3,3) is best in the first and third; 4 and 5
  // repeat 0 and 1, so they stay.
  const std::vector<std::vector<double>> v = {{1, 1, 5}, {1, 2, 4}, {2, 2, 5},
                                              {0, 3, 3}, {1, 1, 5}, {1, 2, 4}};
  EXPECT_EQ(pareto_front(v, std::vector{kMin, kMin, kMin}),
            (std::vector<std::size_t>{0, 1, 3, 4, 5}));
}

TEST(Pareto, NonFiniteDesignsAreLeftOut) {
  // 1 would dominate everything, but its energy is not a number.
  const std::vector<std::vector<double>> v = {{2, 2}, {0, std::nan("")}, {3, 1}};
  EXPECT_EQ(pareto_front(v, std::vector{kMin, kMin}), (std::vector<std::size_t>{0, 2}));
}

TEST(Pareto, MatchesThePairwiseDefinitionOnTiedRandomDesigns) {
  // Small integer values make many ties and duplicates; senses mixed.
  std::mt19937 rng(7);
  std::uniform_int_distribution<int> value(0, 5);
  for (const std::vector<Sense>& senses :
       {std::vector{kMin, kMax}, std::vector{kMin, kMin, kMax}, std::vector{kMax, kMin, kMin, kMin}}) {
    std::vector<std::vector<double>> v(300);
    for (auto& design : v)
      for (std::size_t k = 0; k < senses.size(); ++k) design.push_back(value(rng));
    EXPECT_EQ(pareto_front(v, senses), brute_force(v, senses)) << senses.size() << " objectives";
  }
}

TEST(Pareto, ChosenDesignsAreBestPerObjectiveAndTheKnee) {
  // The front of the first test: A (1,5), B (2,3), D (4,1), E (2,3). Best latency A, best
  // energy D. Scaled over the front (latency 1..4, energy 1..5): A (0, 1) -> 1; B and E
  // (1/3, 1/2) -> 1/9 + 1/4 = 0.361; D (1, 0) -> 1. The knee is B (E ties; the lower index wins).
  const std::vector<std::vector<double>> v = {{1, 5}, {2, 3}, {3, 4}, {4, 1}, {2, 3}};
  const std::vector<Sense> senses{kMin, kMin};
  const std::vector<std::string> names{"latency", "energy"};
  const auto front = pareto_front(v, senses);
  const auto chosen = choose_designs(v, front, senses, names);
  ASSERT_EQ(chosen.size(), 3U);
  EXPECT_EQ(chosen[0].index, 0U);
  EXPECT_EQ(chosen[0].labels, (std::vector<std::string>{"best latency"}));
  EXPECT_EQ(chosen[1].index, 1U);
  EXPECT_EQ(chosen[1].labels, (std::vector<std::string>{"knee"}));
  EXPECT_EQ(chosen[2].index, 3U);
  EXPECT_EQ(chosen[2].labels, (std::vector<std::string>{"best energy"}));
}

TEST(Pareto, OneDesignCanCarrySeveralLabels) {
  // Two designs (1,2) and (2,1): scaled (0,1) and (1,0) tie for the knee; the lower index wins,
  // so design 0 is both the best latency and the knee.
  const std::vector<std::vector<double>> v = {{1, 2}, {2, 1}};
  const std::vector<Sense> senses{kMin, kMin};
  const std::vector<std::string> names{"latency", "energy"};
  const auto chosen = choose_designs(v, pareto_front(v, senses), senses, names);
  ASSERT_EQ(chosen.size(), 2U);
  EXPECT_EQ(chosen[0].labels, (std::vector<std::string>{"best latency", "knee"}));
  EXPECT_EQ(chosen[1].labels, (std::vector<std::string>{"best energy"}));
}

}  // namespace
}  // namespace coda::reports
