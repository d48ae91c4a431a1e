#include "reports/sensitivity.h"

#include <cmath>
#include <string>

#include <gtest/gtest.h>

namespace coda::reports {
namespace {

SensitivityPoint point(double a, double b, double objective) {
  return {{std::to_string(a), std::to_string(b)}, {a, b}, objective};
}

TEST(Sensitivity, PowerLawGivesItsExponents) {
  // objective = 8 / a * sqrt(b) on the grid a in {1, 2, 4}, b in {10, 40}: ln(objective) is
  // exactly -1 ln a + 0.5 ln b + ln 8, so the fits are -1 and +0.5; each axis has 3 (resp. 2)
  // values in 2 (resp. 3) groups.
  std::vector<SensitivityPoint> points;
  for (const double a : {1.0, 2.0, 4.0})
    for (const double b : {10.0, 40.0}) points.push_back(point(a, b, 8.0 / a * std::sqrt(b)));
  const Elasticity ea = elasticity(points, 0);
  ASSERT_TRUE(ea.slope);
  EXPECT_NEAR(*ea.slope, -1.0, 1e-12);
  EXPECT_EQ(ea.groups, 2U);
  EXPECT_EQ(ea.points, 6U);
  const Elasticity eb = elasticity(points, 1);
  ASSERT_TRUE(eb.slope);
  EXPECT_NEAR(*eb.slope, 0.5, 1e-12);
  EXPECT_EQ(eb.groups, 3U);
}

TEST(Sensitivity, GroupsArePooledByTheirSpread) {
  // Group b = 1: objective = a (slope 1); group b = 2: objective = a^2 (slope 2). Both groups
  // have a in {1, 2}, the same spread of ln a, so the pooled slope is their mean: 1.5.
  const std::vector<SensitivityPoint> points = {point(1, 1, 1), point(2, 1, 2), point(1, 2, 1),
                                                point(2, 2, 4)};
  const Elasticity e = elasticity(points, 0);
  ASSERT_TRUE(e.slope);
  EXPECT_NEAR(*e.slope, 1.5, 1e-12);
}

TEST(Sensitivity, NoTwoPointsDifferingOnlyInTheAxisGiveNoSlope) {
  // Latin-hypercube-like: every point differs in both axes, so no group has two points.
  const std::vector<SensitivityPoint> points = {point(1, 10, 3), point(2, 20, 5), point(4, 40, 9)};
  const Elasticity e = elasticity(points, 0);
  EXPECT_FALSE(e.slope);
  EXPECT_EQ(e.groups, 0U);
}

TEST(Sensitivity, PointsThatCannotBeLoggedAreLeftOut) {
  // The third point's objective is 0 (ln undefined): the slope comes from the first two,
  // ln(4/2) / ln(2/1) = 1.
  const std::vector<SensitivityPoint> points = {point(1, 1, 2), point(2, 1, 4), point(4, 1, 0)};
  const Elasticity e = elasticity(points, 0);
  ASSERT_TRUE(e.slope);
  EXPECT_NEAR(*e.slope, 1.0, 1e-12);
  EXPECT_EQ(e.points, 2U);
}

TEST(Sensitivity, AxisValuesAsNumbers) {
  EXPECT_EQ(axis_number("64"), 64.0);
  EXPECT_EQ(axis_number("1 MiB"), 1048576.0);        // IEC
  EXPECT_EQ(axis_number("34 GB/s"), 34e9);           // SI, per second
  EXPECT_EQ(axis_number("20 B/cycle"), 20.0);        // per cycle
  EXPECT_EQ(axis_number("700 MHz"), 700e6);
  EXPECT_FALSE(axis_number("weight_stationary"));
}

}  // namespace
}  // namespace coda::reports
