#include "sim/serving/requests.h"

#include <gtest/gtest.h>

#include <cmath>
#include <fstream>

#include "testing/temp_dir.h"

namespace coda::sim::serving {
namespace {

TEST(ParseLength, ReadsEveryForm) {
  Diagnostics diags;
  const auto fixed = parse_length("512", "--input-len", diags);
  ASSERT_TRUE(fixed);
  EXPECT_EQ(fixed->kind, LengthKind::Fixed);
  EXPECT_EQ(fixed->value, 512u);
  EXPECT_EQ(fixed->largest(), 512u);
  const auto uniform = parse_length("uniform:16:64", "--input-len", diags);
  ASSERT_TRUE(uniform);
  EXPECT_EQ(uniform->kind, LengthKind::Uniform);
  EXPECT_EQ(uniform->largest(), 64u);
  EXPECT_EQ(to_string(*uniform), "uniform:16:64");
  const auto lognormal = parse_length("lognormal:180:1:4:2048", "--output-len", diags);
  ASSERT_TRUE(lognormal);
  EXPECT_EQ(lognormal->kind, LengthKind::LogNormal);
  EXPECT_DOUBLE_EQ(lognormal->median, 180);
  EXPECT_EQ(lognormal->largest(), 2048u);
  EXPECT_FALSE(diags.has_errors());
}

TEST(ParseLength, NamesTheOptionAndWhatIsValid) {
  for (const char* bad : {"0", "-3", "abc", "uniform:64:16", "uniform:1", "lognormal:0:1:1:9",
                          "lognormal:10:1:1", "zipf:1:2", "16777217", ""}) {
    Diagnostics diags;
    EXPECT_FALSE(parse_length(bad, "--input-len", diags)) << bad;
    ASSERT_EQ(diags.error_count(), 1u) << bad;
    EXPECT_EQ(diags.all()[0].path, "--input-len");
    EXPECT_NE(diags.all()[0].hint.find("uniform:MIN:MAX"), std::string::npos);
  }
}

TEST(MakeRequests, PoissonGapsAverageOneOverTheRate) {
  RequestSpec spec;
  spec.arrivals = {.kind = ArrivalKind::Poisson, .rate = 4.0};
  spec.count = 20000;
  spec.seed = 7;
  const std::vector<Request> r = make_requests(spec);
  ASSERT_EQ(r.size(), 20000u);
  // The mean of n exponential gaps of mean 1/rate has a standard deviation of 1/(rate sqrt(n)):
  // 0.25 / 141 = 0.0018 s, so 0.25 s +- 3% (0.0075 s) is over four sigmas.
  const double mean_gap = r.back().arrival / 20000.0;
  EXPECT_NEAR(mean_gap, 0.25, 0.0075);
  for (std::size_t i = 1; i < r.size(); ++i) ASSERT_GE(r[i].arrival, r[i - 1].arrival);
  EXPECT_EQ(make_requests(spec), r);  // deterministic for a seed
  spec.seed = 8;
  EXPECT_NE(make_requests(spec), r);
}

TEST(MakeRequests, GammaGapsHaveTheirCoefficientOfVariation) {
  RequestSpec spec;
  spec.arrivals = {.kind = ArrivalKind::Gamma, .rate = 2.0, .cv = 2.0};
  spec.count = 40000;
  const std::vector<Request> r = make_requests(spec);
  double sum = 0, sq = 0, last = 0;
  for (const Request& q : r) {
    const double gap = q.arrival - last;
    last = q.arrival;
    sum += gap;
    sq += gap * gap;
  }
  const double n = static_cast<double>(r.size());
  const double mean = sum / n;
  const double cv = std::sqrt(sq / n - mean * mean) / mean;
  EXPECT_NEAR(mean, 0.5, 0.5 * 0.05);
  EXPECT_NEAR(cv, 2.0, 0.2);
}

TEST(MakeRequests, LengthsStayInTheirRange) {
  RequestSpec spec;
  spec.arrivals = {.kind = ArrivalKind::Offline};
  spec.count = 5000;
  spec.input = {.kind = LengthKind::Uniform, .min = 10, .max = 20};
  spec.output = {.kind = LengthKind::LogNormal, .min = 4, .max = 300, .median = 50, .sigma = 1};
  double in_sum = 0;
  std::vector<std::uint64_t> outs;
  for (const Request& q : make_requests(spec)) {
    EXPECT_EQ(q.arrival, 0.0);
    ASSERT_GE(q.input, 10u);
    ASSERT_LE(q.input, 20u);
    ASSERT_GE(q.output, 4u);
    ASSERT_LE(q.output, 300u);
    in_sum += static_cast<double>(q.input);
    outs.push_back(q.output);
  }
  EXPECT_NEAR(in_sum / 5000.0, 15.0, 0.3);  // sd of the mean 3.16 / sqrt(5000) = 0.045
  std::sort(outs.begin(), outs.end());
  EXPECT_NEAR(static_cast<double>(outs[2500]), 50.0, 4.0);  // the median, unclamped there
}

TEST(MakeRequests, ASharedPrefixLengthensEveryPrompt) {
  RequestSpec spec;
  spec.count = 3;
  spec.input = {.kind = LengthKind::Fixed, .value = 100};
  spec.shared_prefix = 400;
  for (const Request& r : make_requests(spec)) {
    EXPECT_EQ(r.input, 500u);
    EXPECT_EQ(r.shared_prefix, 400u);
  }
}

TEST(MakeRequests, LengthsDoNotDependOnTheArrivals) {
  RequestSpec spec;
  spec.count = 50;
  spec.input = {.kind = LengthKind::Uniform, .min = 1, .max = 4000};
  spec.arrivals = {.kind = ArrivalKind::Offline};
  const std::vector<Request> offline = make_requests(spec);
  spec.arrivals = {.kind = ArrivalKind::Poisson, .rate = 3};
  const std::vector<Request> poisson = make_requests(spec);
  spec.arrivals = {.kind = ArrivalKind::Poisson, .rate = 6};
  const std::vector<Request> faster = make_requests(spec);
  for (std::size_t i = 0; i < 50; ++i) {
    EXPECT_EQ(offline[i].input, poisson[i].input);
    EXPECT_EQ(offline[i].output, poisson[i].output);
    // Exponential gaps are -ln(1 - u) / rate: the same draws at twice the rate, half the times.
    EXPECT_NEAR(faster[i].arrival, poisson[i].arrival / 2, 1e-9);
  }
}

std::filesystem::path write(const std::filesystem::path& dir, const std::string& text) {
  auto path = dir / "trace.csv";
  std::ofstream(path) << text;
  return path;
}

TEST(ReadRequestTrace, ReadsColumnsInAnyOrder) {
  const testing::TempDir dir;
  const auto path =
      write(dir.path(), "input_tokens,arrival_s,output_tokens,note\n128,0,16,a\n256,0.5,8,b\n");
  Diagnostics diags;
  const auto r = read_request_trace(path, diags);
  ASSERT_TRUE(r) << diags.format_all();
  ASSERT_EQ(r->size(), 2u);
  EXPECT_EQ((*r)[1].input, 256u);
  EXPECT_EQ((*r)[1].output, 8u);
  EXPECT_DOUBLE_EQ((*r)[1].arrival, 0.5);
  EXPECT_EQ((*r)[1].id, 1u);
}

TEST(ReadRequestTrace, ErrorsNameTheFileLineAndColumn) {
  const testing::TempDir dir;
  {
    Diagnostics diags;
    EXPECT_FALSE(read_request_trace(write(dir.path(), "arrival_s,input_tokens\n0,5\n"), diags));
    ASSERT_EQ(diags.error_count(), 1u);
    EXPECT_EQ(diags.all()[0].where.line, 1);
    EXPECT_NE(diags.all()[0].message.find("output_tokens"), std::string::npos);
  }
  {
    Diagnostics diags;
    EXPECT_FALSE(read_request_trace(
        write(dir.path(), "arrival_s,input_tokens,output_tokens\n0,5,5\n1,x,5\n0.5,5,0\n"), diags));
    ASSERT_EQ(diags.error_count(), 3u) << diags.format_all();
    EXPECT_EQ(diags.all()[0].where.line, 3);
    EXPECT_EQ(diags.all()[0].path, "row 3, column 'input_tokens'");
    EXPECT_EQ(diags.all()[1].path, "row 4, column 'arrival_s'");  // before the previous row
    EXPECT_EQ(diags.all()[2].path, "row 4, column 'output_tokens'");
  }
  {
    Diagnostics diags;  // a control character on line 2, column 3
    EXPECT_FALSE(read_request_trace(
        write(dir.path(),
              std::string("arrival_s,input_tokens,output_tokens\n0,") + '\x01' + "5,5\n"),
        diags));
    ASSERT_EQ(diags.error_count(), 1u);
    EXPECT_EQ(diags.all()[0].where.line, 2);
    EXPECT_EQ(diags.all()[0].where.column, 3);
  }
  {
    Diagnostics diags;
    EXPECT_FALSE(read_request_trace(dir.path() / "missing.csv", diags));
    EXPECT_EQ(diags.error_count(), 1u);
  }
}

}  // namespace
}  // namespace coda::sim::serving
