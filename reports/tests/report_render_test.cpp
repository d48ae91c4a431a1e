// The report drawn for real: gnuplot makes the charts, headless Chromium opens the page and counts
// the charts it drew. Each test skips (with the package to install) when its program is missing.

#include <cstdlib>
#include <filesystem>
#include <fstream>

#include <gtest/gtest.h>

#include "reports/co_design_report.h"
#include "reports/gnuplot.h"
#include "reports/tests/report_fixtures.h"

namespace coda::reports {
namespace {

namespace fs = std::filesystem;
using std::chrono::milliseconds;

#define SKIP_WITHOUT(program, package)                                                  \
  if (!test::on_path(program))                                                          \
  GTEST_SKIP() << "'" program "' is not installed; install the Debian package " package \
                  " (scripts/packages.sh lists it)"

TEST(Gnuplot, AMissingProgramNamesThePackage) {
  const GnuplotOutput out = run_gnuplot("plot x\n", milliseconds(2000), "coda-no-such-gnuplot");
  EXPECT_FALSE(out.ok);
  EXPECT_EQ(out.error,
            "'coda-no-such-gnuplot' is not installed (not found on PATH); install the Debian "
            "package gnuplot-nox (apt-get install gnuplot-nox)");
}

TEST(Gnuplot, DrawsAnSvg) {
  SKIP_WITHOUT("gnuplot", "gnuplot-nox");
  const GnuplotOutput out = run_gnuplot("set terminal svg\nplot x\n", milliseconds(10000));
  ASSERT_TRUE(out.ok) << out.error;
  EXPECT_EQ(out.svg.rfind("<?xml", 0), 0U);
  EXPECT_NE(out.svg.find("</svg>"), std::string::npos);
}

TEST(Gnuplot, AScriptErrorComesBackWithGnuplotsMessage) {
  SKIP_WITHOUT("gnuplot", "gnuplot-nox");
  const GnuplotOutput out =
      run_gnuplot("set terminal svg\nplot no_such_function(x)\n", milliseconds(10000));
  EXPECT_FALSE(out.ok);
  EXPECT_NE(out.error.find("undefined function: no_such_function"), std::string::npos)
      << out.error;
}

TEST(Gnuplot, ARunPastTheTimeoutIsStopped) {
  SKIP_WITHOUT("gnuplot", "gnuplot-nox");
  const auto start = std::chrono::steady_clock::now();
  const GnuplotOutput out = run_gnuplot("pause 30\n", milliseconds(300));
  EXPECT_FALSE(out.ok);
  EXPECT_EQ(out.error, "'gnuplot' ran past its 300 ms limit and was stopped");
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(10));
}

// Counts the page's charts and those drawn with a real size and many marks, after layout, and
// writes both counts into the page for --dump-dom.
constexpr std::string_view kCountScript = R"(<script>
const charts = document.querySelectorAll('figure.chart > svg');
let drawn = 0;
for (const svg of charts) {
  const box = svg.getBoundingClientRect();
  const marks = svg.querySelectorAll('path, polyline, polygon, circle, rect, use, text').length;
  if (box.width > 100 && box.height > 100 && marks >= 10) drawn++;
}
const out = document.createElement('div');
out.id = 'render-check';
out.textContent = 'charts=' + charts.length + ' drawn=' + drawn;
document.body.appendChild(out);
</script>
)";

TEST(ReportRender, ChromiumDrawsEveryChart) {
  SKIP_WITHOUT("gnuplot", "gnuplot-nox");
  SKIP_WITHOUT("chromium", "chromium");
  const ReportOutcome out = build_report(test::full_input(), [](std::string_view script) {
    return run_gnuplot(script, milliseconds(20000));
  });
  ASSERT_TRUE(out.report) << out.error;
  const std::size_t charts = out.report->charts.size();
  ASSERT_EQ(charts, 10U);  // sweep 2, each run 3, comparison 2
  std::string html = out.report->html;
  const auto body_end = html.rfind("</body>");
  ASSERT_NE(body_end, std::string::npos);
  html.insert(body_end, kCountScript);
  const fs::path dir = test::scratch_dir("report_render_test", "chromium");
  std::ofstream(dir / "report.html", std::ios::binary) << html;
  const fs::path dom = dir / "dom.html";
  // --no-sandbox: CI runs as root; a private profile so no other Chromium is disturbed.
  const std::string command = fmt::format(
      "timeout 60 chromium --headless --no-sandbox --disable-gpu --disable-dev-shm-usage "
      "--no-first-run --user-data-dir='{}' --dump-dom 'file://{}' > '{}' 2> '{}'",
      (dir / "profile").string(), fs::absolute(dir / "report.html").string(), dom.string(),
      (dir / "chromium.log").string());
  ASSERT_EQ(std::system(command.c_str()), 0) << command << "\nsee " << (dir / "chromium.log");
  std::ifstream in(dom);
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_NE(text.find(fmt::format("<div id=\"render-check\">charts={0} drawn={0}</div>", charts)),
            std::string::npos)
      << text.substr(text.size() > 400 ? text.size() - 400 : 0);
}

}  // namespace
}  // namespace coda::reports
